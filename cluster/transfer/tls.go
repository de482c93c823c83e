package transfer

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Members is the cluster as the transport sees it: package cluster's
// membership, adapted by the caller (cluster/transfer does not import
// cluster). Lookup must not block: it reads an in-memory view.
type Members interface {
	// Lookup returns the transfer address (host:port, the xfer tag) of
	// node id, and whether id is a node that may exchange batches with
	// this one: a member that has not left (a failed member still is: it
	// may come back). addr is empty for a member without the tag.
	Lookup(id string) (addr string, member bool)
}

// Why a connection was refused (X1); the values of the reason label of
// snapstore_cluster_transfer_refused_total and of the refusal log lines.
const (
	reasonNoCert    = "no client certificate"
	reasonUntrusted = "untrusted certificate"
	reasonNotMember = "not a member"
	reasonHandshake = "handshake"
	reasonHello     = "hello"
)

// refusal is a connection the receiver refused, with its reason.
type refusal struct {
	reason string
	detail string
	sans   []string
}

func (r *refusal) Error() string {
	s := "transfer: connection refused: " + r.reason
	if r.detail != "" {
		s += ": " + r.detail
	}
	return s
}

// credentials are this node's certificate and the cluster CA.
type credentials struct {
	id   string
	cert tls.Certificate
	pool *x509.CertPool
	// notAfter is when the node certificate expires: the others refuse
	// it from then on, and the node owns partitions it cannot receive.
	notAfter time.Time
}

// loadCredentials reads the CA, this node's certificate and its key, and
// checks that the certificate chains to the CA for both uses (it serves
// and it dials) and names the node: its DNS SANs must include id. Open
// wraps its errors in ErrCredentials. The files are read whole: this
// package imports none of the module, and serve's check of the
// configuration (config.checkServeFiles) has refused a file over
// boundedread.MaxPEMBytes before the transfer opens.
func loadCredentials(caFile, certFile, keyFile, id string) (*credentials, error) {
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("reading the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the node certificate and key: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", certFile, err)
		}
	}
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
			return nil, fmt.Errorf("%s does not verify against the CA of %s for %s: %w", certFile, caFile, usageName(use), err)
		}
	}
	if !slices.Contains(leaf.DNSNames, id) {
		return nil, fmt.Errorf("%s names %s, not this node's id %q: the other nodes check that a node's certificate names its id (snapstore cert node)",
			certFile, sanList(leaf.DNSNames), id)
	}
	return &credentials{id: id, cert: cert, pool: pool, notAfter: leaf.NotAfter}, nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageServerAuth {
		return "server authentication"
	}
	return "client authentication"
}

func sanList(names []string) string {
	if len(names) == 0 {
		return "no DNS name"
	}
	return "DNS names " + strings.Join(names, ", ")
}

// serverConfig is the receiver's TLS configuration (X1): TLS 1.3, a
// client certificate required, verified here rather than by crypto/tls so
// that a refusal carries its reason: it must chain to the CA for client
// authentication and name a member.
func (c *credentials) serverConfig(members Members) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
		ClientAuth:   tls.RequireAnyClientCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := c.peerID(cs, members)
			return err
		},
	}
}

// peerID returns the node id a client certificate proves, or a *refusal.
// The id is the certificate's DNS SAN that names a member; a certificate
// naming two members is refused as ambiguous.
func (c *credentials) peerID(cs tls.ConnectionState, members Members) (string, error) {
	if len(cs.PeerCertificates) == 0 {
		return "", &refusal{reason: reasonNoCert}
	}
	leaf := cs.PeerCertificates[0]
	inter := x509.NewCertPool()
	for _, ic := range cs.PeerCertificates[1:] {
		inter.AddCert(ic)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: c.pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return "", &refusal{reason: reasonUntrusted, detail: err.Error(), sans: leaf.DNSNames}
	}
	var ids []string
	for _, n := range leaf.DNSNames {
		if _, ok := members.Lookup(n); ok {
			ids = append(ids, n)
		}
	}
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", &refusal{reason: reasonNotMember, detail: sanList(leaf.DNSNames) + " name no member of the cluster", sans: leaf.DNSNames}
	}
	return "", &refusal{reason: reasonNotMember, detail: "the certificate names several members (" + strings.Join(ids, ", ") + ")", sans: leaf.DNSNames}
}

// clientConfig is the sender's TLS configuration for a connection to
// node target (X1): TLS 1.3, this node's certificate, and crypto/tls's
// own verification of the receiver's chain and of its name, the server
// name being target's id: a receiver whose certificate names another node
// is refused.
func (c *credentials) clientConfig(target string) *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{c.cert},
		RootCAs:      c.pool,
		ServerName:   target,
	}
}

// handshakeRefusal classifies the error of a failed server handshake.
func handshakeRefusal(err error) *refusal {
	var r *refusal
	if errors.As(err, &r) {
		return r
	}
	return &refusal{reason: reasonHandshake, detail: err.Error()}
}

// pemBlock returns the first PEM block of type typ in b.
func pemBlock(b []byte, typ string) (*pem.Block, error) {
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			return nil, fmt.Errorf("no PEM block %q", typ)
		}
		if blk.Type == typ {
			return blk, nil
		}
	}
}
