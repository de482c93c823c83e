package snapstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/cluster/transfer"
	"github.com/snapstore/snapstore/snapshot"
)

// TestValidate pins the option combinations Validate refuses, each naming
// its option.
func TestValidate(t *testing.T) {
	for _, c := range []struct {
		opts source.OptionValues
		key  string // "" when valid
	}{
		{source.OptionValues{"url": "https://edge1:8080"}, ""},
		{source.OptionValues{"url": "http://127.0.0.1:8080/", "token": source.NewSecret("t")}, ""},
		{source.OptionValues{"url": "https://e/", "ca_file": "/ca.pem", "client_cert": "/c.pem", "client_key": "/k.pem"}, ""},
		{source.OptionValues{}, "url"},
		{source.OptionValues{"url": "ftp://edge1"}, "url"},
		{source.OptionValues{"url": "edge1:8080"}, "url"},
		{source.OptionValues{"url": "https://user:pw@edge1"}, "url"},
		{source.OptionValues{"url": "https://edge1/?x=1"}, "url"},
		{source.OptionValues{"url": "https://edge1", "client_cert": "/c.pem"}, "client_key"},
		{source.OptionValues{"url": "https://edge1", "client_key": "/k.pem"}, "client_cert"},
		{source.OptionValues{"url": "http://edge1", "ca_file": "/ca.pem"}, "ca_file"},
		{source.OptionValues{"url": "https://edge1", "connect_timeout": time.Duration(0)}, "connect_timeout"},
		{source.OptionValues{"url": "https://edge1", "read_timeout": -time.Second}, "read_timeout"},
	} {
		err := connector{}.Validate(c.opts)
		if c.key == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opts, err)
			}
			continue
		}
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != c.key {
			t.Errorf("%v: %v, want an error naming %s", c.opts, err, c.key)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("%v: the error shows the URL's password: %v", c.opts, err)
		}
	}
}

// TestValidateRead pins the read options ValidateRead refuses, each
// naming its option.
func TestValidateRead(t *testing.T) {
	for _, c := range []struct {
		opts source.OptionValues
		key  string // "" when valid
	}{
		{source.OptionValues{}, ""},
		{source.OptionValues{"columns": []string{"id", "total"}, "start": []string{"EU"}, "end": []string{"EV", "7"}}, ""},
		{source.OptionValues{"columns": []string{}}, "columns"},
		{source.OptionValues{"columns": []string{"id", ""}}, "columns"},
		{source.OptionValues{"columns": []string{"id", "id"}}, "columns"},
		{source.OptionValues{"columns": []string{"id", "a,b", `say "hi"`}}, ""},
		{source.OptionValues{"start": []string{}}, "start"},
		{source.OptionValues{"end": []string{}}, "end"},
	} {
		err := connector{}.ValidateRead(c.opts)
		if c.key == "" {
			if err != nil {
				t.Errorf("%v: %v", c.opts, err)
			}
			continue
		}
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != c.key {
			t.Errorf("%v: %v, want an error naming %s", c.opts, err, c.key)
		}
	}
}

// TestColumnsParam: the columns a copy keeps are asked of the scan in
// double quotes where a name holds a comma, a quote or surrounding spaces,
// so that it is one name (the server reads columns= as a CSV record), and
// bare otherwise, as a server reading no quotes takes them.
func TestColumnsParam(t *testing.T) {
	if got, want := columnsParam([]string{"id", "a,b", `say "hi"`, " pad ", "two words"}), `id,"a,b","say ""hi"""," pad ",two words`; got != want {
		t.Fatalf("columnsParam: %s, want %s", got, want)
	}
}

// TestDerivation checks a derived copy's schema (the columns kept in the
// source's order, the key required among them), its key range (typed by
// the key columns' kinds, prefixes bounding as a scan's start and end) and
// the suffix of the name it records.
func TestDerivation(t *testing.T) {
	s := snapshot.Schema{Columns: []snapshot.Column{
		{Name: "region", Kind: snapshot.KindString}, {Name: "id", Kind: snapshot.KindInt},
		{Name: "total", Kind: snapshot.KindDecimal}, {Name: "note", Kind: snapshot.KindString},
	}, Key: []string{"region", "id"}}

	whole := derivation{}
	if got, err := whole.schema(s, `dataset "orders"`, 3); err != nil || !slices.Equal(got.Columns, s.Columns) || whole.derived() || whole.suffix() != "" {
		t.Errorf("no derivation: %v %v derived %v suffix %q", got, err, whole.derived(), whole.suffix())
	}

	d := derivationOf(source.OptionValues{"columns": []string{"total", "id", "region"}, "start": []string{"EU"}, "end": []string{"EU", "100"}})
	got, err := d.schema(s, `dataset "orders"`, 3)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range got.Columns {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "region,id,total" || !slices.Equal(got.Key, s.Key) {
		t.Errorf("columns %v key %v, want region,id,total and the source's key", names, got.Key)
	}
	if want := ` columns=["total","id","region"] start=["EU"] end=["EU","100"]`; d.suffix() != want || !d.derived() {
		t.Errorf("suffix %q, want %q", d.suffix(), want)
	}

	for _, c := range []struct {
		cols []string
		want string
	}{
		{[]string{"region", "total"}, `the key column "id" of dataset "orders" is not among the columns`},
		{[]string{"region", "id", "price"}, `column "price" is not a column of dataset "orders" version 3`},
	} {
		_, err := derivation{columns: c.cols}.schema(s, `dataset "orders"`, 3)
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != "source_options.columns" || !strings.Contains(err.Error(), c.want) {
			t.Errorf("columns %v: %v, want %q naming source_options.columns", c.cols, err, c.want)
		}
	}

	start, end, err := d.keyRange(s)
	if err != nil {
		t.Fatal(err)
	}
	key := func(region string, id int64) []byte {
		b, err := snapshot.AppendKey(nil, []snapshot.Value{{Kind: snapshot.KindString, Bytes: []byte(region)}, {Kind: snapshot.KindInt, Int: id}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		region string
		id     int64
		in     bool
	}{{"AS", 1, false}, {"EU", -7, true}, {"EU", 99, true}, {"EU", 100, false}, {"EU", 101, false}, {"US", 1, false}} {
		if got := inRange(key(c.region, c.id), start, end); got != c.in {
			t.Errorf("(%s, %d): in range %v, want %v", c.region, c.id, got, c.in)
		}
	}
	for _, c := range []struct {
		d    derivation
		want string
	}{
		{derivation{start: []string{"EU", "x"}}, "source_options.start"},
		{derivation{end: []string{"EU", "1", "2"}}, "source_options.end"},
	} {
		_, _, err := c.d.keyRange(s)
		var oe *source.OptionError
		if !errors.As(err, &oe) || oe.Key != c.want {
			t.Errorf("%+v: %v, want an error naming %s", c.d, err, c.want)
		}
	}
}

// TestCertificateRefused: a server whose certificate the connection does
// not trust answers, so the test says the settings do not fit it (cause
// config) and names options.ca_file, rather than "cannot connect".
func TestCertificateRefused(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	defer ts.Close()
	src, err := connector{}.Open(context.Background(), source.SourceConfig{
		Name: "edge", Options: source.OptionValues{"url": ts.URL}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res := src.(source.Tester).Test(context.Background())
	if res.OK || res.Cause != "config" || !strings.Contains(res.Message, "options.ca_file") || !strings.Contains(res.Message, "certificate") {
		t.Errorf("test against an untrusted certificate: %+v", res)
	}
}

// TestAnswerNotAProblem: an answer that is no snapstore problem (plain
// HTTP sent to an HTTPS server, a proxy's page) says what the server
// said, and an answer that echoes the token shows it REDACTED.
func TestAnswerNotAProblem(t *testing.T) {
	const token = "edge-reader-token-0123456789"
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"status":400,"code":"bad_request","detail":"header ` + r.Header.Get("Authorization") + `"}`))
	}))
	defer echo.Close()
	for _, c := range []struct {
		url, want string
	}{
		{"http://" + strings.TrimPrefix(tlsSrv.URL, "https://"), "HTTP 400: Client sent an HTTP request to an HTTPS server."},
		{echo.URL, "HTTP 400 bad_request: header Bearer REDACTED"},
	} {
		src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge",
			Options: source.OptionValues{"url": c.url, "token": source.NewSecret(token)}, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		res := src.(source.Tester).Test(context.Background())
		src.Close()
		if res.OK || !strings.Contains(res.Message, c.want) || strings.Contains(res.Message, token) {
			t.Errorf("test of %s: %+v, want a message with %q", c.url, res, c.want)
		}
	}
}

// TestURLWithoutTheAPI: a URL whose path leads to no route of the API (a
// wrong path prefix, another web server) fails the test with cause
// config, naming the connection and options.url.
func TestURLWithoutTheAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"status":404,"code":"route_not_found","detail":"no route ` + r.URL.Path + `"}`))
	}))
	defer srv.Close()
	src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge",
		Options: source.OptionValues{"url": srv.URL + "/snap", "token": source.NewSecret("edge-reader-token-0123456789")}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res := src.(source.Tester).Test(context.Background())
	if res.OK || res.Cause != "config" || !strings.Contains(res.Message, `data connection "edge"`) || !strings.Contains(res.Message, "options.url does not lead to the API") {
		t.Fatalf("test of a URL without the API: %+v", res)
	}
}

// TestAnswerWithoutEnd: a server at options.url whose JSON answer is
// larger than maxJSONAnswer fails the test saying so, rather than being
// read whole.
func TestAnswerWithoutEnd(t *testing.T) {
	old := maxJSONAnswer
	maxJSONAnswer = 1 << 20
	t.Cleanup(func() { maxJSONAnswer = old })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"datasets":[`)
		chunk := strings.Repeat(`{"name":"d"},`, 1000)
		for i := 0; i < 1000; i++ { // 13 MB, unless the reader stops
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
		io.WriteString(w, `{"name":"e"}]}`)
	}))
	defer srv.Close()
	src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge",
		Options: source.OptionValues{"url": srv.URL, "token": source.NewSecret("edge-reader-token-0123456789")}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	res := src.(source.Tester).Test(context.Background())
	if res.OK || !strings.Contains(res.Message, "the answer of /v1/datasets is larger than 1048576 bytes, more than a snapstore server sends") {
		t.Fatalf("test of a server whose answer has no end: %+v", res)
	}
}

// TestRedirectNotFollowed: a source server that answers a redirect is not
// followed, so that the connection's token reaches no URL but the one the
// connection names: not the same host over plain HTTP (the token in
// clear), nor another port of it. The answer is an error naming where
// the server pointed, for the operator to fix options.url.
func TestRedirectNotFollowed(t *testing.T) {
	const token = "edge-reader-token-0123456789"
	var leaked atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"datasets":[]}`))
	}))
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer tlsSrv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{tlsSrv.URL, plain.URL + "/x"} {
		opts := source.OptionValues{"url": u, "token": source.NewSecret(token)}
		if strings.HasPrefix(u, "https:") {
			opts["ca_file"] = caFile
		} else {
			// A plain server that redirects to another port of itself.
			mux := http.NewServeMux()
			mux.HandleFunc("/x/", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, plain.URL+strings.TrimPrefix(r.URL.RequestURI(), "/x"), http.StatusFound)
			})
			other := httptest.NewServer(mux)
			defer other.Close()
			opts["url"] = other.URL + "/x"
		}
		src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge", Options: opts, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		res := src.(source.Tester).Test(context.Background())
		src.Close()
		if n := leaked.Load(); n != 0 {
			t.Fatalf("url %s: the token followed a redirect to %s (%d requests)", opts["url"], plain.URL, n)
		}
		if res.OK || res.Cause != "config" || !strings.Contains(res.Message, "redirect") || !strings.Contains(res.Message, plain.URL) || strings.Contains(res.Message, token) {
			t.Errorf("url %s: %+v, want a failed test of cause config naming the redirect to %s", opts["url"], res, plain.URL)
		}
	}
}

// TestClientCertificateRefused: a server that refuses the connection's
// client certificate (expired, of a CA it does not trust) answers with a
// TLS alert: the test says the settings do not fit the server (cause
// config) and names options.client_cert, rather than "cannot connect".
func TestClientCertificateRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caCert, caKey, err := transfer.NewCA("clients", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caCert)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"datasets":[]}`))
	}))
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()
	expCert, expKey, err := transfer.NewServerCert(caCert, caKey, []string{"client"}, -30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	otherCA, otherCAKey, err := transfer.NewCA("other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, otherKey, err := transfer.NewServerCert(otherCA, otherCAKey, []string{"client"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	goodCert, goodKey, err := transfer.NewServerCert(caCert, caKey, []string{"client"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca := write("ca.pem", caCert)
	for _, c := range []struct {
		name       string
		cert, key  []byte
		ok         bool
		wantInText string
	}{
		{"expired", expCert, expKey, false, "expired certificate"},
		{"other-ca", otherCert, otherKey, false, "certificate"},
		{"good", goodCert, goodKey, true, ""},
	} {
		src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge", Logger: slog.New(slog.DiscardHandler),
			Options: source.OptionValues{"url": ts.URL, "ca_file": ca,
				"client_cert": write(c.name+".crt", c.cert), "client_key": write(c.name+".key", c.key)}})
		if err != nil {
			t.Fatal(err)
		}
		res := src.(source.Tester).Test(context.Background())
		src.Close()
		if c.ok {
			if !res.OK {
				t.Errorf("%s client certificate: %+v, want a passed test", c.name, res)
			}
			continue
		}
		if res.OK || res.Cause != "config" || !strings.Contains(res.Message, "options.client_cert") || !strings.Contains(res.Message, c.wantInText) {
			t.Errorf("%s client certificate: %+v, want cause config naming options.client_cert", c.name, res)
		}
	}
}

// TestClientCertificateDroppedAfterHandshake: under TLS 1.3 the client's
// handshake ends before the server checks its certificate, and a server
// that refuses it may close the connection without the client reading
// its alert (a reset, the request written meanwhile). A server that
// asked for a client certificate and then resets is cause config naming
// options.client_cert, with a certificate given or none, over HTTP/1.1
// or HTTP/2; one that asked
// for none and resets stays unreachable.
func TestClientCertificateDroppedAfterHandshake(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caCert, caKey, err := transfer.NewCA("clients", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srvCert, srvKey, err := transfer.NewServerCert(caCert, caKey, []string{"127.0.0.1"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey, err := transfer.NewServerCert(caCert, caKey, []string{"client"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ca := write("ca.pem", caCert)
	// resetting accepts TLS connections, completes the handshake, and
	// resets each one with no alert.
	resetting := func(auth tls.ClientAuthType, protos ...string) string {
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: auth, MinVersion: tls.VersionTLS13, NextProtos: protos})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tc := c.(*tls.Conn)
				_ = tc.Handshake()
				if tcp, ok := tc.NetConn().(*net.TCPConn); ok {
					_ = tcp.SetLinger(0)
				}
				tc.NetConn().Close()
			}
		}()
		return "https://" + ln.Addr().String()
	}
	asking, notAsking := resetting(tls.RequireAnyClientCert), resetting(tls.NoClientCert)
	askingH2 := resetting(tls.RequireAnyClientCert, "h2", "http/1.1")
	for _, c := range []struct {
		name   string
		opts   source.OptionValues
		cause  string
		naming bool
	}{
		{"certificate given", source.OptionValues{"url": asking, "ca_file": ca, "client_cert": write("c.crt", cliCert), "client_key": write("c.key", cliKey)}, "config", true},
		{"no certificate", source.OptionValues{"url": asking, "ca_file": ca}, "config", true},
		{"no certificate, HTTP/2", source.OptionValues{"url": askingH2, "ca_file": ca}, "config", true},
		{"none asked", source.OptionValues{"url": notAsking, "ca_file": ca}, "unreachable", false},
	} {
		src, err := connector{}.Open(context.Background(), source.SourceConfig{Name: "edge", Logger: slog.New(slog.DiscardHandler), Options: c.opts})
		if err != nil {
			t.Fatal(err)
		}
		res := src.(source.Tester).Test(context.Background())
		src.Close()
		if res.OK || res.Cause != c.cause || strings.Contains(res.Message, "options.client_cert") != c.naming {
			t.Errorf("%s: %+v, want cause %s (naming options.client_cert: %v)", c.name, res, c.cause, c.naming)
		}
	}
}
