package adapters

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/snapstore/snapstore/api"
)

// newKeyFile writes a key file of n fresh keys and returns its path and
// the keys' lines.
func newKeyFile(t *testing.T, n int) (string, []string) {
	t.Helper()
	var lines []string
	for range n {
		k := make([]byte, secretKeySize)
		if _, err := rand.Read(k); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, base64.StdEncoding.EncodeToString(k))
	}
	return writeKeyFile(t, lines...), lines
}

func writeKeyFile(t *testing.T, lines ...string) string {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "key")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("# snapstore keys\n" + strings.Join(lines, "\n") + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// TestSecretBox_SealOpen: a value opens for its connection and option
// only (E1), names its key (E2), and two seals of one text differ.
func TestSecretBox_SealOpen(t *testing.T) {
	path, _ := newKeyFile(t, 1)
	b, err := openSecretBox(SecretKeys{KeyFiles: []string{path}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	s1, err := b.seal("shop", "password", "pw-of-shop")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.seal("shop", "password", "pw-of-shop")
	if s1.Data == s2.Data {
		t.Fatal("two seals of one text are equal: the nonce is not random")
	}
	if s1.Key != b.keys[0].id || len(s1.Key) != 8 || s1.Alg != sealedAlg {
		t.Fatalf("sealed value names key %q alg %q", s1.Key, s1.Alg)
	}
	if strings.Contains(s1.Data, base64.StdEncoding.EncodeToString([]byte("pw-of-shop"))) {
		t.Fatal("the sealed data holds the text")
	}
	if got, err := b.open("shop", "password", s1); err != nil || got != "pw-of-shop" {
		t.Fatalf("open: %q %v", got, err)
	}
	for _, c := range []struct{ conn, key string }{{"other", "password"}, {"shop", "dsn"}, {"sho", "ppassword"}} {
		if _, err := b.open(c.conn, c.key, s1); !errors.Is(err, ErrSecretUnreadable) {
			t.Errorf("opened as %s/%s: %v", c.conn, c.key, err)
		}
	}
	raw, _ := base64.StdEncoding.DecodeString(s1.Data)
	raw[len(raw)-1] ^= 1
	altered := *s1
	altered.Data = base64.StdEncoding.EncodeToString(raw)
	if _, err := b.open("shop", "password", &altered); !errors.Is(err, ErrSecretUnreadable) {
		t.Errorf("an altered value opened: %v", err)
	}
	other, _ := newKeyFile(t, 1)
	b2, err := openSecretBox(SecretKeys{KeyFiles: []string{other}}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b2.open("shop", "password", s1); !errors.Is(err, ErrSecretKeyUnknown) || !strings.Contains(err.Error(), s1.Key) {
		t.Errorf("opened with another key: %v", err)
	}
}

// TestSecretBox_KeyFiles: every key of every file opens, the first seals;
// a bad file is an *OptionError naming the option, the file and the line,
// never the line's text.
func TestSecretBox_KeyFiles(t *testing.T) {
	a, linesA := newKeyFile(t, 2)
	c, _ := newKeyFile(t, 1)
	b, err := openSecretBox(SecretKeys{KeyFiles: []string{a, c}}, testLogger())
	if err != nil || len(b.keys) != 3 {
		t.Fatalf("keys %d, %v", len(b.keys), err)
	}
	k, _ := b.firstKey()
	if raw, _ := base64.StdEncoding.DecodeString(linesA[0]); k.id != keyID(raw) {
		t.Fatal("the first key of the first file does not seal")
	}
	var logs bytes.Buffer
	if _, err := openSecretBox(SecretKeys{KeyFiles: []string{c}}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil || strings.Contains(logs.String(), "chmod") {
		t.Fatalf("a 0600 key file: %v %s", err, logs.String())
	}
	if err := os.Chmod(c, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openSecretBox(SecretKeys{KeyFiles: []string{c}}, slog.New(slog.NewTextHandler(&logs, nil))); err != nil || !strings.Contains(logs.String(), "chmod 600") {
		t.Fatalf("a 0644 key file: %v %s", err, logs.String())
	}
	bad := writeKeyFile(t, "dGhpcy1pcy1ub3QtYS1rZXk=")
	for name, files := range map[string][]string{
		"line 2":            {bad},
		"holds no key":      {writeKeyFile(t)},
		"the same key":      {a, writeKeyFile(t, linesA[1])},
		"no such file":      {filepath.Join(t.TempDir(), "absent")},
		"want the standard": {a, bad},
	} {
		_, err := openSecretBox(SecretKeys{KeyFiles: files, KeyFileOption: "secrets.key_files"}, testLogger())
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key != "secrets.key_files" || !strings.Contains(err.Error(), name) && name != "no such file" {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), "dGhpcy1pcy1ub3QtYS1rZXk") {
			t.Errorf("%s: the error quotes the line: %v", name, err)
		}
	}
}

// TestSecretBox_KeyFileBounded: a key file is read up to 1 MiB: a device
// named by mistake (/dev/zero) or a larger file is refused naming the
// file, at start, rather than read until the memory runs out.
func TestSecretBox_KeyFileBounded(t *testing.T) {
	big, _ := newKeyFile(t, 1)
	f, err := os.OpenFile(big, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Comments past the bound: a file of keys that is too large.
	if _, err := f.WriteString(strings.Repeat("# "+strings.Repeat("z", 1000)+"\n", 1100)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, path := range []string{big, "/dev/zero"} {
		err := CheckSecretKeyFile(path)
		if err == nil || !strings.Contains(err.Error(), "key file "+path+" is larger than 1048576 bytes") {
			t.Errorf("%s: %v", path, err)
		}
		_, err = openSecretBox(SecretKeys{KeyFiles: []string{path}, KeyFileOption: "secrets.key_file"}, testLogger())
		var oe *OptionError
		if !errors.As(err, &oe) || oe.Key != "secrets.key_file" {
			t.Errorf("%s: open: %v", path, err)
		}
	}
}

// TestSecretBox_GeneratedKey (E4): with no key file and a GenerateDir, the
// first seal generates a 0600 key there, logged by path and never by
// value, and a later box reads it; with neither, sealing is refused
// naming secrets.key_file.
func TestSecretBox_GeneratedKey(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	b, err := openSecretBox(SecretKeys{GenerateDir: dir}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, generatedKeyFile)
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("key generated before it was needed: %v", err)
	}
	s, err := b.seal("c", "password", "x")
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("generated key: %v %v", fi, err)
	}
	data, _ := os.ReadFile(path)
	line := strings.TrimSpace(string(data))
	if !strings.Contains(logs.String(), path) || strings.Contains(logs.String(), line) {
		t.Fatalf("log: %s", logs.String())
	}
	b2, err := openSecretBox(SecretKeys{GenerateDir: dir}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b2.open("c", "password", s); err != nil || got != "x" {
		t.Fatalf("reopened box: %q %v", got, err)
	}
	// A key file set later comes first; the generated key still opens.
	kf, _ := newKeyFile(t, 1)
	b3, err := openSecretBox(SecretKeys{KeyFiles: []string{kf}, GenerateDir: dir}, testLogger())
	if err != nil || len(b3.keys) != 2 {
		t.Fatalf("keys %d %v", len(b3.keys), err)
	}
	if got, err := b3.open("c", "password", s); err != nil || got != "x" {
		t.Fatalf("generated key after a key file: %q %v", got, err)
	}
	none, err := openSecretBox(SecretKeys{}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := none.seal("c", "password", "x"); !errors.Is(err, ErrSecretKeyMissing) || !strings.Contains(err.Error(), "secrets.key_file") {
		t.Fatalf("seal with no key: %v", err)
	}
}

// storedSpec reads connection name's record as stored.
func storedSpec(t *testing.T, ts *testStack, name string) (defRecord[api.Connection], []byte) {
	t.Helper()
	b, err := ts.db.GetRecord(context.Background(), recordConnection, name)
	if err != nil {
		t.Fatal(err)
	}
	var rec defRecord[api.Connection]
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return rec, b
}

// revealed returns the password connection name holds in memory.
func revealed(ts *testStack, name string) string {
	ts.svc.mu.Lock()
	defer ts.svc.mu.Unlock()
	d, ok := ts.svc.conns.active(name)
	if !ok {
		return "<none>"
	}
	return d.opts.Secret("password").Reveal()
}

// TestSecretsAtRest_Pebble: a literal password given to the service is
// nowhere in the bytes of the Pebble directory once it is closed (E1), a
// reference is stored as given (E3), and after a restart the connection
// still connects to the real MariaDB.
func TestSecretsAtRest_Pebble(t *testing.T) {
	ctx := context.Background()
	e := mysqlEnv(t)
	dir := t.TempDir()
	ts := openStack(t, dir, Options{})
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lit", Type: "mysql", Options: e.literalOptions("sakila")}); err != nil {
		t.Fatal(noteErr(err))
	}
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "ref", Type: "mysql", Options: e.options(t, "sakila")}); err != nil {
		t.Fatal(noteErr(err))
	}
	rec, _ := storedSpec(t, ts, "lit")
	if s := asSealed(rec.Spec.Options["password"]); s == nil || s.Key == "" {
		t.Fatalf("stored password is a %T, not a sealed value", rec.Spec.Options["password"])
	}
	if rec, _ := storedSpec(t, ts, "ref"); rec.Spec.Options["password"] != "env:SNAPSTORE_TEST_PW_REF" {
		t.Fatalf("stored reference: %v", rec.Spec.Options["password"])
	}
	ts.close()
	assertNoTrace(t, dir, e.Password)

	ts = openStack(t, dir, Options{})
	if got := revealed(ts, "lit"); got != e.Password {
		t.Fatal("the password read back differs")
	}
	if res, err := ts.svc.TestConnection(ctx, "lit"); err != nil || !res.OK {
		t.Fatalf("test after a restart: %+v %v", res, noteErr(err))
	}
}

// assertNoTrace fails when any file under dir holds secret.
func assertNoTrace(t *testing.T, dir, secret string) {
	t.Helper()
	files := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		return nil
	})
	if err != nil || files == 0 {
		t.Fatalf("walking %s: %d files, %v", dir, files, err)
	}
}

// TestSecretsAtRest_NoKeyRefused (E4): a service that shares its store
// (no GenerateDir) and has no key file refuses a literal, naming
// secrets.key_file, and still takes references.
func TestSecretsAtRest_NoKeyRefused(t *testing.T) {
	ctx := context.Background()
	ts := newStack(t, Options{SecretKeys: SecretKeys{KeyFiles: []string{}}})
	opts := map[string]any{"host": "127.0.0.1", "user": "u", "password": "literal-pw-1", "database": "d"}
	_, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "lit", Type: "mysql", Options: opts})
	if !errors.Is(err, ErrSecretKeyMissing) || !strings.Contains(err.Error(), "secrets.key_file") || strings.Contains(err.Error(), "literal-pw-1") {
		t.Fatalf("literal with no key: %v", err)
	}
	if _, err := ts.svc.GetConnection(ctx, "lit"); !errors.Is(err, ErrConnectionNotFound) {
		t.Fatalf("the refused connection exists: %v", err)
	}
	opts["password"] = "env:SNAPSTORE_TEST_PW"
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "ref", Type: "mysql", Options: opts}); err != nil {
		t.Fatalf("reference with no key: %v", err)
	}
	if _, err := ts.svc.RotateSecrets(ctx); !errors.Is(err, ErrSecretKeyMissing) {
		t.Fatalf("rotate with no key: %v", err)
	}
}

// TestRotateSecrets (E5): secrets stored in clear and under an old key are
// encrypted with the new first key; a second rotation rewrites nothing;
// with the old key dropped every secret still reads; a value copied into
// another connection does not open.
func TestRotateSecrets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldKey, oldLines := newKeyFile(t, 1)
	ts := openStack(t, dir, Options{SecretKeys: SecretKeys{KeyFiles: []string{oldKey}}})
	pw := map[string]string{"a": "pw-a-0001", "b": "pw-b-0002", "c": "pw-c-0003"}
	for _, n := range []string{"a", "b"} {
		opts := map[string]any{"host": "127.0.0.1", "user": "u", "password": pw[n], "database": "d"}
		if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: n, Type: "mysql", Options: opts}); err != nil {
			t.Fatal(err)
		}
	}
	// c as an earlier version stored it: in clear.
	clearRec, _ := json.Marshal(defRecord[api.Connection]{Spec: api.Connection{Name: "c", Type: "mysql", Options: map[string]any{
		"host": "127.0.0.1", "user": "u", "password": pw["c"], "database": "d"}}, Revision: 1})
	if err := ts.db.PutRecord(ctx, recordConnection, "c", clearRec); err != nil {
		t.Fatal(err)
	}
	ts.close()

	newKey, newLines := newKeyFile(t, 1)
	both := writeKeyFile(t, newLines[0], oldLines[0])
	var logs bytes.Buffer
	ts = openStack(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), SecretKeys: SecretKeys{KeyFiles: []string{both}}})
	if !strings.Contains(logs.String(), `msg="stored secrets not encrypted yet; snapstore secrets rotate encrypts them" count=1`) {
		t.Fatalf("start log: %s", logs.String())
	}
	for n, p := range pw {
		if got := revealed(ts, n); got != p {
			t.Fatalf("%s before rotation: %q", n, got)
		}
	}
	rep, err := ts.svc.RotateSecrets(ctx)
	if err != nil || rep.Secrets != 3 || rep.Connections != 3 || rep.KeyID != ts.svc.secrets.keys[0].id {
		t.Fatalf("rotate: %+v %v", rep, err)
	}
	if rep, err := ts.svc.RotateSecrets(ctx); err != nil || rep.Secrets != 0 || rep.Connections != 0 {
		t.Fatalf("second rotate: %+v %v", rep, err)
	}
	recA, _ := storedSpec(t, ts, "a")
	if s := asSealed(recA.Spec.Options["password"]); s == nil || s.Key != rep.KeyID || recA.Revision != 1 {
		t.Fatalf("a after rotation: %+v", recA)
	}
	ts.close()

	logs.Reset()
	ts = openStack(t, dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), SecretKeys: SecretKeys{KeyFiles: []string{newKey}}})
	if strings.Contains(logs.String(), "not encrypted") {
		t.Fatalf("start log with every secret sealed: %s", logs.String())
	}
	for n, p := range pw {
		if got := revealed(ts, n); got != p {
			t.Fatalf("%s with the old key dropped: %q", n, got)
		}
	}
	// a's sealed password copied into b's record does not open as b's.
	recB, _ := storedSpec(t, ts, "b")
	recB.Spec.Options["password"] = recA.Spec.Options["password"]
	moved, _ := json.Marshal(recB)
	if err := ts.db.PutRecord(ctx, recordConnection, "b", moved); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.svc.parseStoredConnection(recB.Spec); !errors.Is(err, ErrSecretUnreadable) {
		t.Fatalf("a's secret moved to b: %v", err)
	}
	if _, err := ts.svc.RotateSecrets(ctx); err != nil {
		t.Fatalf("rotation over a moved value sealed with the first key: %v", err)
	}
	ts.close()
	ts = openStack(t, dir, Options{SecretKeys: SecretKeys{KeyFiles: []string{newKey}}})
	if got := revealed(ts, "b"); got != "<none>" {
		t.Fatalf("b loaded with a moved secret: %q", got)
	}
}

// TestRotateSecrets_ConcurrentReplace (E5): a rotation that read a record
// before a replace does not write back over it: its conditional write
// loses, and it rotates what the record holds then.
func TestRotateSecrets_ConcurrentReplace(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	oldKey, oldLines := newKeyFile(t, 1)
	ts := openStack(t, dir, Options{SecretKeys: SecretKeys{KeyFiles: []string{oldKey}}})
	opts := map[string]any{"host": "127.0.0.1", "user": "u", "password": "pw-rev-1", "database": "d"}
	if _, err := ts.svc.CreateConnection(ctx, api.Connection{Name: "x", Type: "mysql", Options: opts}); err != nil {
		t.Fatal(err)
	}
	ts.close()
	_, newLines := newKeyFile(t, 1)
	ts = openStack(t, dir, Options{SecretKeys: SecretKeys{KeyFiles: []string{writeKeyFile(t, newLines[0], oldLines[0])}}})
	_, stale := storedSpec(t, ts, "x")
	opts["password"] = "pw-rev-2"
	if _, _, err := ts.svc.PutConnection(ctx, api.Connection{Name: "x", Type: "mysql", Options: opts}); err != nil {
		t.Fatal(err)
	}
	n, err := ts.svc.rotateRecord(ctx, "x", stale)
	if err != nil || n != 0 {
		// The replace already sealed with the first key: nothing left.
		t.Fatalf("rotate of a stale read: %d %v", n, err)
	}
	rec, _ := storedSpec(t, ts, "x")
	if rec.Revision != 2 {
		t.Fatalf("the replace was lost: revision %d", rec.Revision)
	}
	if got, err := ts.svc.secrets.open("x", "password", asSealed(rec.Spec.Options["password"])); err != nil || got != "pw-rev-2" {
		t.Fatalf("stored password after the race: %q %v", got, err)
	}
}
