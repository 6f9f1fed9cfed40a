package experiment

import httpp "v6lab/internal/proto/http"

var DefaultTestConfig = httpp.DefaultServerConfig
