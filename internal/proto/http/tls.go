package http

import (
	"crypto/tls"
	"fmt"

	"v6lab/internal/gen/load"
)

// TLS key exchange groups a client offers (TLSGroups).
const (
	// GroupsClassic offers X25519 and P-256, as OpenSSL 3.0 clients (wrk,
	// h2load, curl on Debian 12) and the studies' era did: the default.
	GroupsClassic = "classic"
	// GroupsPQ offers the post-quantum hybrid X25519MLKEM768 first, as
	// Go's and current browsers' defaults do; it costs the client and the
	// server more CPU per handshake.
	GroupsPQ = "pq"
)

// TLSGroups returns the curve preferences of a group choice.
func TLSGroups(name string) ([]tls.CurveID, error) {
	switch name {
	case "", GroupsClassic:
		return []tls.CurveID{tls.X25519, tls.CurveP256}, nil
	case GroupsPQ:
		return []tls.CurveID{tls.X25519MLKEM768, tls.X25519, tls.CurveP256}, nil
	}
	return nil, fmt.Errorf("http: unknown TLS groups %q (want classic or pq)", name)
}

// setTLS records a connection's TLS in tr: in words for the marker, and
// as the sample's typed fields (its version, whether it resumed) that the
// report's labels read.
func setTLS(tr *load.Trace, st tls.ConnectionState) {
	tr.TLS = tlsMarker(st)
	tr.S.TLS, tr.S.Resumed = tls.VersionName(st.Version), st.DidResume
}

// tlsMarker describes a connection's TLS for the sample's marker.
func tlsMarker(st tls.ConnectionState) string {
	s := tls.VersionName(st.Version) + " " + tls.CipherSuiteName(st.CipherSuite)
	if st.CurveID != 0 {
		s += " " + st.CurveID.String()
	}
	if st.DidResume {
		return s + " resumed"
	}
	return s + " full handshake"
}
