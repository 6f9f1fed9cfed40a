package http

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"time"
)

// SelfSigned makes a server TLS configuration with a fresh ECDSA P-256
// certificate for names and addrs, valid for a day: the embedded server's
// HTTPS, which clients reach with Insecure (no CA is involved). TLS 1.2
// and 1.3 are offered; session tickets are on, so clients may resume.
func SelfSigned(names []string, addrs []netip.Addr) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("http: tls key: %w", err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "v6lab embedded server"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     names,
	}
	for _, a := range addrs {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(a.AsSlice()))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("http: tls certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}

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
