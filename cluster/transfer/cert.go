package transfer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"regexp"
	"strings"
	"time"
)

// Certificates for a cluster that has no CA of its own (snapstore cert):
// a cluster CA, and per node a certificate whose one DNS SAN is the node
// id, usable to serve and to dial (X1). Keys are ECDSA P-256, written as
// PKCS #8; serial numbers are 128 random bits.

// Default validity of what NewCA and NewNodeCert make.
const (
	DefaultCAValidity   = 10 * 365 * 24 * time.Hour
	DefaultNodeValidity = 825 * 24 * time.Hour // the longest that browsers accept; a convention operators know
)

// dnsLabel is what a node id must be to stand in a DNS SAN.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// NewCA returns a new cluster CA certificate and its key, PEM-encoded,
// valid from now for valid.
func NewCA(name string, valid time.Duration) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: generating the CA key: %w", err)
	}
	tmpl, err := template(name, valid)
	if err != nil {
		return nil, nil, err
	}
	tmpl.IsCA = true
	tmpl.BasicConstraintsValid = true
	tmpl.MaxPathLenZero = true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: creating the CA certificate: %w", err)
	}
	return encodePair(der, key)
}

// NewNodeCert returns a certificate for node id signed by the CA (its
// certificate and key in PEM, as NewCA returns them), and its key; the
// certificate's one DNS SAN is id, and it serves for both server and
// client authentication.
func NewNodeCert(caCertPEM, caKeyPEM []byte, id string, valid time.Duration) (certPEM, keyPEM []byte, err error) {
	if !dnsLabel.MatchString(id) {
		return nil, nil, fmt.Errorf("transfer: node id %q cannot be a DNS name (lower-case letters, digits and inner dashes, at most 63)", id)
	}
	return newLeaf(caCertPEM, caKeyPEM, id, []string{id}, nil, valid)
}

// NewServerCert returns a certificate for the HTTPS API of a server
// reached as hosts (DNS names or IP addresses, the first also its common
// name) signed by the CA, and its key. Like a node certificate it serves
// for both server and client authentication, so that a node presents it
// when it calls another node's API that asks for client certificates.
func NewServerCert(caCertPEM, caKeyPEM []byte, hosts []string, valid time.Duration) (certPEM, keyPEM []byte, err error) {
	if len(hosts) == 0 {
		return nil, nil, fmt.Errorf("transfer: a server certificate needs at least one host name or address")
	}
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if why := badHostName(h); why != "" {
			return nil, nil, fmt.Errorf("transfer: %q is neither a DNS name nor an IP address: %s", h, why)
		}
		dns = append(dns, h)
	}
	return newLeaf(caCertPEM, caKeyPEM, hosts[0], dns, ips, valid)
}

// hostLabel is a label of a host name as a certificate names it: letters,
// digits, "_" and inner dashes, at most 63 (RFC 1123, with the "_" that
// internal names hold and that Go's verification takes).
var hostLabel = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$`)

// badHostName says why h cannot be a DNS name of a certificate, "" when
// it can: at most 253 characters of labels (hostLabel), the first of
// them "*" for a wildcard, the last not digits alone, so that a
// mistyped address ("999.1.1.1", "10.0.0") is refused rather than put in
// a certificate that no client reaching the address would accept.
func badHostName(h string) string {
	if h == "" || len(h) > 253 {
		return "a name has 1 to 253 characters"
	}
	labels := strings.Split(h, ".")
	for i, l := range labels {
		if i == 0 && l == "*" && len(labels) > 1 {
			continue
		}
		if !hostLabel.MatchString(l) {
			return "each part between dots has 1 to 63 letters, digits, _ and inner -"
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "its last part is digits alone, as in a mistyped IP address"
	}
	return ""
}

// newLeaf returns a certificate named cn with the given SANs, signed by
// the CA, for server and client authentication, and its new key.
func newLeaf(caCertPEM, caKeyPEM []byte, cn string, dns []string, ips []net.IP, valid time.Duration) (certPEM, keyPEM []byte, err error) {
	caBlk, err := pemBlock(caCertPEM, "CERTIFICATE")
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: reading the CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caBlk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: parsing the CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, nil, fmt.Errorf("transfer: the CA certificate (%s) is not a CA", ca.Subject)
	}
	keyBlk, err := pemBlock(caKeyPEM, "PRIVATE KEY")
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: reading the CA key: %w", err)
	}
	caKey, err := x509.ParsePKCS8PrivateKey(keyBlk.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: parsing the CA key: %w", err)
	}
	signer, ok := caKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("transfer: the CA key (%T) cannot sign", caKey)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: generating the key of %s: %w", cn, err)
	}
	tmpl, err := template(cn, valid)
	if err != nil {
		return nil, nil, err
	}
	if tmpl.NotAfter.After(ca.NotAfter) {
		tmpl.NotAfter = ca.NotAfter
	}
	tmpl.DNSNames = dns
	tmpl.IPAddresses = ips
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), signer)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: creating the certificate of %s: %w", cn, err)
	}
	return encodePair(der, key)
}

// template is a certificate template named cn, valid from a minute ago
// (clocks of the nodes differ a little) for valid.
func template(cn string, valid time.Duration) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("transfer: drawing a serial number: %w", err)
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"snapstore"}},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(valid),
	}, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("transfer: encoding the key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}), nil
}
