// Package wire proves on the wire what a path claims: the lab's packet
// capture (capture), its receive ring (pktring) and server-side TCP flows
// (tcpflow).
package wire
