package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/snapstore/snapstore/cluster"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/config"
	"github.com/snapstore/snapstore/internal/boundedread"
)

// cmdCert is `snapstore cert SUBCOMMAND`, certificates for the transfer
// of partitioned runs (cluster.transfer.*) and for the HTTPS API (tls.*)
// when the organisation has no CA of its own:
//
//	snapstore cert ca DIR [--valid D]                a cluster CA: DIR/ca.crt, DIR/ca.key
//	snapstore cert node DIR [--id ID] [--valid D]    a node certificate signed by DIR's CA: DIR/ID.crt, DIR/ID.key
//	snapstore cert server DIR --host H,... [--name N] an API certificate signed by DIR's CA: DIR/N.crt, DIR/N.key
//
// node names the node by --id, else by the node id of the data directory
// (--data, or the configuration's data), which it creates as serve would
// at the node's first start. Neither overwrites a file unless --force.
func cmdCert(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runGroup(ctx, "cert", certHelp, []subcommand{
		{"ca", "DIR [--valid DURATION] [--force]", "a cluster CA: DIR/ca.crt, DIR/ca.key", certCommand("ca")},
		{"node", "DIR [--id ID] [--valid DURATION] [--force]", "a node certificate signed by DIR's CA: DIR/ID.crt, DIR/ID.key", certCommand("node")},
		{"server", "DIR --host NAME,... [--name NAME] [--valid DURATION] [--force]", "a certificate of the HTTPS API signed by DIR's CA: DIR/NAME.crt, DIR/NAME.key", cmdCertServer},
	}, args, stdout, stderr)
}

const certHelp = `Certificates for the transfer of partitioned runs between nodes
(cluster.transfer.*) and for the HTTPS API (tls.*), for an organisation
without a CA of its own (docs/cluster.md, docs/security.md).`

const certServerHelp = `A certificate of the HTTPS API (tls.cert_file, tls.key_file) signed by the
CA in DIR (snapstore cert ca DIR makes one): DIR/NAME.crt and DIR/NAME.key
(NAME defaults to "server"), for the host names and IP addresses of
--host, by which clients and the other nodes of a cluster reach the API.
Clients trust it with --ca-file DIR/ca.crt. It prints the lines of the
configuration, with absolute paths. No file is overwritten unless --force.`

// cmdCertServer is 'snapstore cert server'.
func cmdCertServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("cert server", "DIR --host NAME,...", certServerHelp, flagsNone, stdout)
	valid := transfer.DefaultNodeValidity
	c.fs.DurationVar(&valid, "valid", valid, "how long the certificate is valid")
	hosts := c.fs.String("host", "", "comma-separated `names` (DNS names or IP addresses) of the server; the first is also its common name")
	name := c.fs.String("name", "server", "base `name` of the files written")
	force := c.fs.Bool("force", false, "overwrite existing files")
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	if valid <= 0 {
		return usageError("--valid must be positive, got %s", valid)
	}
	var hs []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return usageError("--host: give the names or addresses clients use to reach the server, e.g. --host snapstore.example.com,10.0.0.5")
	}
	if *name == "" || strings.ContainsAny(*name, `/\`) {
		return usageError("--name: want a file name without a directory, got %q", *name)
	}
	dir := pos[0]
	caCert, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	cc, err := boundedread.PEMFile(caCert)
	if err != nil {
		return fmt.Errorf("reading the CA (snapstore cert ca %s makes one): %w", dir, err)
	}
	ck, err := boundedread.PEMFile(caKey)
	if err != nil {
		return fmt.Errorf("reading the CA key: %w", err)
	}
	sc, k, err := transfer.NewServerCert(cc, ck, hs, valid)
	if err != nil {
		return usageError("%v", err)
	}
	certFile, keyFile := filepath.Join(dir, *name+".crt"), filepath.Join(dir, *name+".key")
	if err := writePair(dir, certFile, keyFile, sc, k, *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s for %s (valid until %s); the configuration's tls section (docs/security.md):\n", certFile, keyFile, strings.Join(hs, ", "), notAfter(sc))
	fmt.Fprintf(stdout, "tls:\n  cert_file: %s\n  key_file: %s\n", absPath(certFile), absPath(keyFile))
	fmt.Fprintf(stdout, "clients: --ca-file %s (or %s)\n", absPath(caCert), envCAFile)
	return nil
}

// absPath is p made absolute for the configuration lines a command
// prints: serve takes a relative file path from the directory it runs in
// (a systemd unit's WorkingDirectory, say), not from the one the
// certificate was made in. p itself when the working directory is unknown.
func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

const certNodeHelp = `A node certificate signed by the CA in DIR (snapstore cert ca DIR makes
one): DIR/ID.crt and DIR/ID.key, naming the node by --id, else by the node
id of the data directory (--data, or the configuration's data), which it
creates as serve would at the node's first start. It prints the lines of
the node's configuration. No file is overwritten unless --force.`

// certCommand is `snapstore cert SUB`.
func certCommand(sub string) command {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return runCert(sub, args, stdout)
	}
}

// runCert makes the CA (sub "ca") or a node certificate (sub "node").
func runCert(sub string, args []string, stdout io.Writer) error {
	help, kind := "A cluster CA for the transfer: DIR/ca.crt and DIR/ca.key. Keep ca.key secret; give every node ca.crt. No file is overwritten unless --force.", flagsNone
	if sub == "node" {
		help, kind = certNodeHelp, flagsConfig
	}
	c := newCmdLine("cert "+sub, "DIR", help, kind, stdout)
	fset, cf := c.fs, c.cf
	valid := transfer.DefaultCAValidity
	if sub == "node" {
		valid = transfer.DefaultNodeValidity
	}
	fset.DurationVar(&valid, "valid", valid, "how long the certificate is valid")
	force := fset.Bool("force", false, "overwrite existing files")
	id := ""
	if sub == "node" {
		fset.StringVar(&id, "id", "", "the node id the certificate names (default: the data directory's node id)")
	}
	pos, err := c.parseN(args, 1, 1)
	if err != nil {
		return err
	}
	if valid <= 0 {
		return usageError("--valid must be positive, got %s", valid)
	}
	dir := pos[0]
	caCert, caKey := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if sub == "ca" {
		cc, k, err := transfer.NewCA("snapstore cluster CA", valid)
		if err != nil {
			return err
		}
		if err := writePair(dir, caCert, caKey, cc, k, *force); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s and %s (valid until %s); keep ca.key secret, give every node ca.crt\n", caCert, caKey, notAfter(cc))
		return nil
	}
	// The cluster section printed takes the node's addresses from its
	// config when it has them.
	var nodeCluster config.ClusterConfig
	cfg, cfgErr := loadConfig(cf, os.Environ())
	if cfgErr == nil {
		nodeCluster = cfg.Cluster
	}
	if id == "" {
		if cfgErr != nil {
			return cfgErr
		}
		created := false
		var err error
		if id, created, err = cluster.LoadNodeID(cfg.Data); err != nil {
			return err
		}
		if created {
			fmt.Fprintf(stdout, "new node id %s in %s\n", id, cfg.Data)
		}
	}
	cc, err := boundedread.PEMFile(caCert)
	if err != nil {
		return fmt.Errorf("reading the CA (snapstore cert ca %s makes one): %w", dir, err)
	}
	ck, err := boundedread.PEMFile(caKey)
	if err != nil {
		return fmt.Errorf("reading the CA key: %w", err)
	}
	nc, k, err := transfer.NewNodeCert(cc, ck, id, valid)
	if err != nil {
		return err
	}
	certFile, keyFile := filepath.Join(dir, id+".crt"), filepath.Join(dir, id+".key")
	if err := writePair(dir, certFile, keyFile, nc, k, *force); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s and %s for node %s (valid until %s); its configuration's cluster section, with the lines marked EDIT edited (docs/cluster.md):\n", certFile, keyFile, id, notAfter(nc))
	fmt.Fprint(stdout, clusterSnippet(nodeCluster, absPath(caCert), absPath(certFile), absPath(keyFile)))
	return nil
}

// The placeholders of the printed cluster section, for the addresses the
// user must choose: documentation addresses (RFC 5737), so that a section
// pasted unedited fails to bind rather than listen somewhere unintended.
const (
	placeholderBind           = "192.0.2.1:7946"
	placeholderTransferListen = "192.0.2.1:7950"
	editNote                  = "   # EDIT: "
)

// clusterSnippet is the cluster section for a node's configuration with
// its transfer certificates: the gossip bind address, the gossip key file
// and the transfer listen address (all needed with the certificates off
// loopback), taken from the node's config when it has them, else
// placeholders marked EDIT.
func clusterSnippet(cc config.ClusterConfig, caFile, certFile, keyFile string) string {
	var b strings.Builder
	b.WriteString("cluster:\n")
	if cc.Bind != "" {
		fmt.Fprintf(&b, "  bind: %s\n", cc.Bind)
	} else {
		fmt.Fprintf(&b, "  bind: %s%sthis node's gossip address host:port\n", placeholderBind, editNote)
	}
	if cc.GossipKeyFile != "" {
		fmt.Fprintf(&b, "  gossip_key_file: %s\n", cc.GossipKeyFile)
	} else {
		fmt.Fprintf(&b, "  gossip_key_file: gossip.key%sthe file of snapstore cluster keygen, the same on every node\n", editNote)
	}
	b.WriteString("  transfer:\n")
	if cc.Transfer.Listen != "" {
		fmt.Fprintf(&b, "    listen: %s\n", cc.Transfer.Listen)
	} else {
		fmt.Fprintf(&b, "    listen: %s%sthis node's address that the other nodes reach (host:port)\n", placeholderTransferListen, editNote)
	}
	fmt.Fprintf(&b, "    ca_file: %s\n    cert_file: %s\n    key_file: %s\n", caFile, certFile, keyFile)
	return b.String()
}

// writePair writes a certificate (0644) and its key (0600) in dir, neither
// over an existing file unless force.
func writePair(dir, certFile, keyFile string, cert, key []byte, force bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	flag := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flag = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	for _, f := range []struct {
		path string
		data []byte
		perm os.FileMode
	}{{keyFile, key, 0o600}, {certFile, cert, 0o644}} {
		w, err := os.OpenFile(f.path, flag, f.perm)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s exists; --force overwrites it", f.path)
		}
		if err != nil {
			return err
		}
		_, err = w.Write(f.data)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.path, err)
		}
	}
	return nil
}

// notAfter returns the expiry of a PEM certificate, as the CLI writes
// times (timeText).
func notAfter(certPEM []byte) string {
	blk, _ := pem.Decode(certPEM)
	if blk == nil {
		return "?"
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return "?"
	}
	return timeText(&c.NotAfter)
}
