package adapters

import (
	"bufio"
	"bytes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/boundedread"
	"golang.org/x/crypto/chacha20poly1305"
)

// Secrets at rest.
//
// The literal secrets of connections defined through the API (options of
// type OptSecret that are not env: or file: references) are kept in the
// metadata table sealed, as Airflow keeps connection passwords under its
// Fernet key:
//
//	E1. A sealed value is XChaCha20-Poly1305 (golang.org/x/crypto) of the
//	    secret under a 32-byte key, with a random 24-byte nonce per value
//	    and the connection's name and the option's key as associated data:
//	    a sealed value copied into another connection or option does not
//	    open.
//	E2. It names the key that sealed it by id (keyID: a short hash of the
//	    key), so that a read opens it with that key. Of several configured
//	    keys, writes use the first and reads the one named; a value sealed
//	    with a key that is not configured does not open.
//	E3. References (env:NAME, file:/path) are stored as given: they name a
//	    secret, they are not one. Config-file definitions are never stored.
//	E4. With no key configured, a key is generated at first need in the
//	    directory SecretKeys.GenerateDir names (the Pebble data directory:
//	    the store is this process's alone), 0600, and the log says where;
//	    without that directory (a shared HBase store, whose nodes must share
//	    the key) a literal is refused with ErrSecretKeyMissing.
//	E5. Service.RotateSecrets rewrites every stored connection whose
//	    secrets are in clear (stored before E1) or sealed with a key other
//	    than the first, each record with a conditional write, so that a
//	    definition replaced meanwhile (on any node) is never overwritten.

// SecretKeys say where the keys that seal secrets at rest come from.
type SecretKeys struct {
	// KeyFiles are files of keys, each line the standard base64 of 32
	// bytes ("openssl rand -base64 32"); blank lines and lines starting
	// with # are skipped. The first key of the first file seals new
	// values; every key opens the values it sealed (E2).
	KeyFiles []string
	// KeyFileOption names the KeyFiles in errors (the configuration's
	// key, "secrets.key_file"); default "secrets.key_file".
	KeyFileOption string
	// GenerateDir is where the key of a process whose store is its own is
	// generated at first need when KeyFiles is empty, and read from
	// afterwards (E4); a key found there is also read when KeyFiles are
	// given, after theirs, so that values it sealed still open. "": no
	// generated key; a literal secret then needs KeyFiles.
	GenerateDir string
}

// generatedKeyFile is the name of the generated key in GenerateDir.
const generatedKeyFile = "secrets.key"

// secretKeySize is the size of a key in bytes (chacha20poly1305.KeySize).
const secretKeySize = chacha20poly1305.KeySize

// sealedAlg names the AEAD of a sealed value (E1).
const sealedAlg = "xchacha20-poly1305"

// secretKey is one key ready to seal and open.
type secretKey struct {
	id   string
	aead cipher.AEAD
}

// keyID is the id of key k that sealed values carry (E2): the first 8 hex
// digits of SHA-256 over a label and the key, which tells keys apart and
// says nothing usable about the key.
func keyID(k []byte) string {
	h := sha256.New()
	h.Write([]byte("snapstore secrets key id\x00"))
	h.Write(k)
	return hex.EncodeToString(h.Sum(nil))[:8]
}

func newSecretKey(k []byte) (secretKey, error) {
	aead, err := chacha20poly1305.NewX(k)
	if err != nil {
		return secretKey{}, err
	}
	return secretKey{id: keyID(k), aead: aead}, nil
}

// sealedSecret is a sealed value as stored in place of the option's
// string: {"sealed": {"alg": ..., "key": ..., "data": ...}}. An option given
// through the API is a string (parseOption), so an object is always one.
type sealedSecret struct {
	Alg string `json:"alg"`
	// Key is the id of the key that sealed it (keyID).
	Key string `json:"key"`
	// Data is the standard base64 of the nonce followed by the ciphertext.
	Data string `json:"data"`
}

// sealedEnvelope is the stored form of one sealed option value.
type sealedEnvelope struct {
	Sealed *sealedSecret `json:"sealed"`
}

// secretBox seals and opens the secrets of stored connections. Safe for
// concurrent use.
type secretBox struct {
	log    *slog.Logger
	option string // names the key files in errors
	genDir string // GenerateDir

	// mu guards keys, which grows once when a key is generated (E4).
	mu   sync.Mutex
	keys []secretKey // keys[0] seals
}

// openSecretBox reads the keys cfg names. Every problem is an
// *OptionError naming cfg.KeyFileOption and the file (and line), never a
// key.
func openSecretBox(cfg SecretKeys, log *slog.Logger) (*secretBox, error) {
	b := &secretBox{log: log, option: cfg.KeyFileOption, genDir: cfg.GenerateDir}
	if b.option == "" {
		b.option = "secrets.key_file"
	}
	seen := map[string]string{}
	add := func(where string, k []byte) error {
		sk, err := newSecretKey(k)
		if err != nil {
			return err
		}
		if prev, dup := seen[sk.id]; dup {
			return fmt.Errorf("%s holds the same key as %s", where, prev)
		}
		seen[sk.id] = where
		b.keys = append(b.keys, sk)
		return nil
	}
	var errs []error
	for _, path := range cfg.KeyFiles {
		keys, err := readKeyFile(path)
		if err == nil && len(keys) == 0 {
			err = fmt.Errorf("key file %s holds no key", path)
		}
		for i, k := range keys {
			if err == nil {
				err = add(fmt.Sprintf("key %d of %s", i+1, path), k)
			}
		}
		if err != nil {
			errs = append(errs, &OptionError{Key: b.option, Msg: err.Error()})
			continue
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o077 != 0 {
			log.Warn("the key file of secrets at rest can be read by other users; chmod 600 it", "path", path, "mode", fi.Mode().Perm().String())
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if b.genDir != "" {
		path := filepath.Join(b.genDir, generatedKeyFile)
		keys, err := readKeyFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, fmt.Errorf("adapters: reading the generated key for secrets at rest: %w", err)
		case len(keys) != 1:
			return nil, fmt.Errorf("adapters: the generated key file %s must hold one key", path)
		default:
			if sk, err := newSecretKey(keys[0]); err != nil {
				return nil, err
			} else if _, dup := seen[sk.id]; !dup {
				b.keys = append(b.keys, sk)
			}
		}
	}
	switch {
	case len(b.keys) > 0:
		ids := make([]string, len(b.keys))
		for i, k := range b.keys {
			ids[i] = k.id
		}
		// The ids let an operator compare the keys of a cluster's nodes.
		log.Info("keys of secrets at rest", "key_ids", ids)
	case b.genDir == "":
		log.Info("no key for secrets at rest: literal secrets given through the API are refused until " + b.option + " is set")
	}
	return b, nil
}

// readKeyFile reads the keys of a key file (SecretKeys.KeyFiles). Errors
// name the file and line, never the line's text.
// CheckSecretKeyFile reports whether the key file at path is one that
// the keys of secrets at rest can be read from: readable, each line the
// standard base64 of 32 bytes, at least one key. The error names the file
// and line, never a key. serve checks its key files with it in the pass
// that checks every other key of the configuration.
func CheckSecretKeyFile(path string) error {
	keys, err := readKeyFile(path)
	for _, k := range keys {
		clear(k)
	}
	if err == nil && len(keys) == 0 {
		err = fmt.Errorf("key file %s holds no key", path)
	}
	return err
}

func readKeyFile(path string) ([][]byte, error) {
	data, err := boundedread.File(path, maxKeyFileBytes)
	defer clear(data)
	if errors.Is(err, boundedread.ErrTooLarge) {
		err = fmt.Errorf("key file %s is %w", path, err)
	}
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(k) != secretKeySize {
			return nil, fmt.Errorf("key file %s, line %d: want the standard base64 of %d bytes (openssl rand -base64 %d)", path, n, secretKeySize, secretKeySize)
		}
		keys = append(keys, k)
	}
	return keys, sc.Err()
}

// maxKeyFileBytes bounds a key file: some twenty thousand keys, where a
// device (/dev/zero) or a file named by mistake would otherwise be read
// until the memory ran out.
const maxKeyFileBytes = 1 << 20

// firstKey returns the key that seals, generating it when none is
// configured and the box has a GenerateDir (E4); ErrSecretKeyMissing when
// it has neither.
func (b *secretBox) firstKey() (secretKey, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.keys) > 0 {
		return b.keys[0], nil
	}
	if b.genDir == "" {
		return secretKey{}, fmt.Errorf("%w: a literal secret given through the API is stored encrypted, and this server has no key: set %s to a file of keys, the same on every node that shares the store (docs/security.md), or give an env:NAME or file:/path reference", ErrSecretKeyMissing, b.option)
	}
	k := make([]byte, secretKeySize)
	defer clear(k)
	if _, err := rand.Read(k); err != nil {
		return secretKey{}, err
	}
	path := filepath.Join(b.genDir, generatedKeyFile)
	line := []byte(base64.StdEncoding.EncodeToString(k) + "\n")
	defer clear(line)
	if err := writeNewFile(path, line); err != nil {
		return secretKey{}, fmt.Errorf("adapters: writing the generated key for secrets at rest: %w", err)
	}
	sk, err := newSecretKey(k)
	if err != nil {
		return secretKey{}, err
	}
	b.keys = append(b.keys, sk)
	b.log.Warn("generated the key that encrypts stored secrets; back it up with the data directory, without it they cannot be read", "path", path, "key_id", sk.id)
	return sk, nil
}

// writeNewFile creates path, 0600, with data, synced; it fails when path
// exists.
func writeNewFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// key returns the configured key of id; ok is false when none is.
func (b *secretBox) key(id string) (secretKey, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range b.keys {
		if k.id == id {
			return k, true
		}
	}
	return secretKey{}, false
}

// secretAD is the associated data of connection conn's option key (E1).
func secretAD(conn, key string) []byte {
	return []byte("snapstore connection secret\x00" + conn + "\x00" + key)
}

// seal seals the secret text of connection conn's option key with the
// first key (E1, E2).
func (b *secretBox) seal(conn, key, text string) (*sealedSecret, error) {
	k, err := b.firstKey()
	if err != nil {
		return nil, err
	}
	return k.seal(conn, key, text)
}

func (k secretKey) seal(conn, key, text string) (*sealedSecret, error) {
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(text)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := k.aead.Seal(nonce, nonce, []byte(text), secretAD(conn, key))
	return &sealedSecret{Alg: sealedAlg, Key: k.id, Data: base64.StdEncoding.EncodeToString(out)}, nil
}

// open returns the text of a value sealed for connection conn's option
// key. ErrSecretKeyUnknown when its key is not configured; an error naming
// the option when it does not open (another connection's or option's
// value, or altered).
func (b *secretBox) open(conn, key string, s *sealedSecret) (string, error) {
	if s.Alg != sealedAlg {
		return "", &OptionError{Key: key, Msg: fmt.Sprintf("stored secret sealed with %q, which this version does not know", s.Alg)}
	}
	k, ok := b.key(s.Key)
	if !ok {
		return "", fmt.Errorf("%w: options.%s of connection %q was encrypted with key %s, which is not among the configured keys (%s)", ErrSecretKeyUnknown, key, conn, s.Key, b.option)
	}
	raw, err := base64.StdEncoding.DecodeString(s.Data)
	ns := k.aead.NonceSize()
	if err != nil || len(raw) < ns+k.aead.Overhead() {
		return "", fmt.Errorf("%w: options.%s of connection %q is not a sealed value", ErrSecretUnreadable, key, conn)
	}
	text, err := k.aead.Open(nil, raw[:ns], raw[ns:], secretAD(conn, key))
	if err != nil {
		return "", fmt.Errorf("%w: options.%s of connection %q does not open with key %s: it was sealed for another connection or option, or altered", ErrSecretUnreadable, key, conn, s.Key)
	}
	return string(text), nil
}

// asSealed returns the sealed value a stored option value v holds, or nil
// for any other value.
func asSealed(v any) *sealedSecret {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := m["sealed"]; !ok || len(m) != 1 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	var e sealedEnvelope
	if json.Unmarshal(b, &e) != nil || e.Sealed == nil {
		return nil
	}
	return e.Sealed
}

// isClearSecret reports whether a stored secret option value is a literal
// kept in clear (E3: a reference or an empty value is not).
func isClearSecret(v any) bool {
	s, ok := v.(string)
	return ok && s != "" && !isSecretRef(s)
}

// secretKeys returns the keys of connection type typ's secret options.
func secretKeys(typ string) []string {
	c, err := lookupConnector(typ)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range c.Options() {
		if d.Type == OptSecret {
			out = append(out, d.Key)
		}
	}
	return out
}

// sealSpec returns spec with every literal secret sealed (E1), for the
// metadata table; spec itself is not modified.
func (b *secretBox) sealSpec(spec api.Connection) (api.Connection, error) {
	var opts map[string]any
	for _, key := range secretKeys(spec.Type) {
		v := spec.Options[key]
		if !isClearSecret(v) {
			continue
		}
		sealed, err := b.seal(spec.Name, key, v.(string))
		if err != nil {
			return spec, err
		}
		if opts == nil {
			opts = make(map[string]any, len(spec.Options))
			for k, v := range spec.Options {
				opts[k] = v
			}
		}
		opts[key] = sealedEnvelope{Sealed: sealed}
	}
	if opts != nil {
		spec.Options = opts
	}
	return spec, nil
}

// openSpec opens the sealed secrets of a stored spec in place, as
// parseConnection takes them.
func (b *secretBox) openSpec(spec api.Connection) error {
	var errs []error
	for _, key := range secretKeys(spec.Type) {
		if s := asSealed(spec.Options[key]); s != nil {
			text, err := b.open(spec.Name, key, s)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			spec.Options[key] = text
		}
	}
	return errors.Join(errs...)
}

// reseal seals again with the first key every secret of a stored spec
// that is in clear or sealed with another key (E5), in place, and returns
// how many it changed.
func (b *secretBox) reseal(spec api.Connection) (int, error) {
	first, err := b.firstKey()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, key := range secretKeys(spec.Type) {
		v := spec.Options[key]
		text := ""
		switch s := asSealed(v); {
		case s != nil && s.Key == first.id && s.Alg == sealedAlg:
			continue
		case s != nil:
			if text, err = b.open(spec.Name, key, s); err != nil {
				return n, err
			}
		case isClearSecret(v):
			text = v.(string)
		default:
			continue
		}
		sealed, err := first.seal(spec.Name, key, text)
		if err != nil {
			return n, err
		}
		spec.Options[key] = sealedEnvelope{Sealed: sealed}
		n++
	}
	return n, nil
}

// clearSecrets counts the secrets of a stored spec kept in clear.
func clearSecrets(spec api.Connection) int {
	n := 0
	for _, key := range secretKeys(spec.Type) {
		if isClearSecret(spec.Options[key]) {
			n++
		}
	}
	return n
}
