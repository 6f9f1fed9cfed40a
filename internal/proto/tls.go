package proto

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/netip"
	"strings"
	"time"
	"v6lab/internal/result"
)

// SelfSigned makes a server TLS configuration with a fresh ECDSA P-256
// certificate for names and addrs, valid for a day: the embedded servers'
// TLS (HTTPS, SMTP's STARTTLS). No CA is involved: clients pin the
// certificate (Pinned) or accept any (Insecure). TLS 1.2 and 1.3 are
// offered; session tickets are on, so clients may resume.
func SelfSigned(names []string, addrs []netip.Addr) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls key: %w", err)
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
		return nil, fmt.Errorf("tls certificate: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, nil
}

// PEM is a server configuration's (first) certificate and its private
// key in PEM: what a real server (nginx, Caddy) reads, so that it shows
// the certificate v6lab's clients pin, as the embedded servers do.
func PEM(cfg *tls.Config) (cert, key []byte, err error) {
	if cfg == nil || len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return nil, nil, errors.New("tls: no certificate")
	}
	c := cfg.Certificates[0]
	der, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		return nil, nil, fmt.Errorf("tls key: %w", err)
	}
	cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})
	key = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return cert, key, nil
}

// CertSHA256 is the hex SHA-256 of a server configuration's (first)
// certificate: what a client pins ("" if it has none).
func CertSHA256(cfg *tls.Config) string {
	if cfg == nil || len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	sum := sha256.Sum256(cfg.Certificates[0].Certificate[0])
	return hex.EncodeToString(sum[:])
}

// OptTLSPin is the option that pins a real server's certificate (http,
// smtp): what `v6lab serve http --tls` and `serve smtp` print at start.
const OptTLSPin = "tls_pin"

// ParsePin reads a certificate's SHA-256 as a pin: 64 hex digits, in
// either case, bare or in pairs split by colons (as openssl x509
// -fingerprint -sha256 prints it). It returns the digits in lowercase.
func ParsePin(s string) (string, error) {
	h := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(s), "sha256 Fingerprint="), ":", ""))
	b, err := hex.DecodeString(h)
	if err != nil || len(b) != sha256.Size {
		return "", fmt.Errorf("%q: want a certificate's SHA-256, 64 hex digits (colons allowed)", s)
	}
	return h, nil
}

// TLSClient are the options of a client that verifies a named server's
// certificate (https, SMTP's STARTTLS): a pin, or none at all.
type TLSClient struct {
	// TLSPin is the SHA-256 of the certificate a real server must show,
	// in place of a CA's verification: how a client trusts v6lab serve
	// http --tls or serve smtp elsewhere.
	TLSPin string `json:"tls_pin,omitempty" opt:"tls_pin" usage:"accept exactly the certificate with this SHA-256 (what v6lab's TLS servers print as they start), in place of a CA's verification"`
	// Insecure accepts any certificate (a probe command's own setting).
	Insecure bool `json:"-" opt:"insecure,flagonly" usage:"accept any TLS certificate"`
}

// CheckPin applies the rules of tls_pin: a certificate's SHA-256, only
// for a named real server (v6lab pins its embedded servers' certificates
// itself), not with insecure. It writes the pin back normalised.
func (o *TLSClient) CheckPin(where result.Where) error {
	if o.TLSPin == "" {
		return nil
	}
	pin, err := ParsePin(o.TLSPin)
	switch {
	case err != nil:
		return Errorf(OptTLSPin, "%v", err)
	case where != result.Hosts:
		return Errorf(OptTLSPin, "pins a real server's certificate (where: hosts); v6lab pins its embedded servers' own")
	case o.Insecure:
		return Errorf(OptTLSPin, "given with insecure: pin the certificate or accept any, not both")
	}
	o.TLSPin = pin
	return nil
}

// ErrPin is wrapped when a server's certificate is not the pinned one.
var ErrPin = errors.New("the server's certificate is not the one pinned")

// Pinned is base (or a new configuration) accepting exactly the
// certificate whose SHA-256 is pin, in place of a CA's verification: how
// v6lab's clients trust v6lab's own embedded servers (Pinner).
func Pinned(base *tls.Config, pin string) *tls.Config {
	cfg := &tls.Config{}
	if base != nil {
		cfg = base.Clone()
	}
	want, _ := hex.DecodeString(pin)
	cfg.InsecureSkipVerify = true // replaced by the pin check below
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return fmt.Errorf("no certificate: %w", ErrPin)
		}
		got := sha256.Sum256(cs.PeerCertificates[0].Raw)
		if len(want) != len(got) || subtle.ConstantTimeCompare(got[:], want) != 1 {
			return fmt.Errorf("SHA-256 %x, pinned %s: %w", got, pin, ErrPin)
		}
		return nil
	}
	return cfg
}

// Pinner is a Running server with TLS whose certificate clients pin (its
// endpoints' CertSHA256).
type Pinner interface {
	CertSHA256() string
}
