package cluster

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/serf/serf"
)

// keyringFile is serf's keyring file in the data directory (K2): a JSON
// list of base64 keys, the primary first, as serf's agent writes it.
const keyringFile = "cluster/keyring.json"

// GenerateKey returns a new random 32-byte gossip key in base64, the form
// of a gossip key file.
func GenerateKey() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// ParseKey decodes a gossip key written as base64 (the first line of a key
// file). Its errors never hold the key.
func ParseKey(s string) ([]byte, error) {
	line, _, _ := strings.Cut(s, "\n")
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(line))
	if err != nil {
		return nil, errors.New("cluster: the gossip key is not base64 (make one with `snapstore cluster keygen`)")
	}
	if err := memberlist.ValidateKey(k); err != nil {
		return nil, fmt.Errorf("cluster: the gossip key has %d bytes; want 16, 24 or 32 (AES-128, -192 or -256)", len(k))
	}
	return k, nil
}

// Fingerprint names a key without showing it: the first 8 bytes of its
// SHA-256, in hex. Logs and answers show keys only so.
func Fingerprint(key []byte) string {
	h := sha256.Sum256(key)
	return hex.EncodeToString(h[:8])
}

// loadKeyring returns the node's keyring (K2): the keyring file's when it
// exists, else one of the configured key, written to the file so that a
// rotation has something to change; nil without either. A configured key
// missing from an existing keyring is reported: the file wins, since it
// holds what rotations made.
func loadKeyring(dir string, key []byte, log *slog.Logger) (*memberlist.Keyring, error) {
	path := filepath.Join(dir, keyringFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		var encoded []string
		if err := json.Unmarshal(b, &encoded); err != nil {
			return nil, fmt.Errorf("cluster: decoding the keyring file %s: %v", path, err)
		}
		var keys [][]byte
		for i, e := range encoded {
			k, err := base64.StdEncoding.DecodeString(e)
			if err != nil || memberlist.ValidateKey(k) != nil {
				return nil, fmt.Errorf("cluster: keyring file %s: key %d is not a base64 key of 16, 24 or 32 bytes", path, i)
			}
			keys = append(keys, k)
		}
		if len(keys) == 0 {
			return nil, fmt.Errorf("cluster: keyring file %s holds no key; remove it to start again from the gossip key", path)
		}
		if key != nil && !slices.ContainsFunc(keys, func(k []byte) bool { return bytes.Equal(k, key) }) {
			log.Warn("the gossip key is not in the keyring file, which wins (it holds the rotated keys): after a rotation, put the primary key in the gossip key file; "+
				"if instead this node missed a rotation (it then joins nobody: no installed keys could decrypt), stop it, delete the keyring file and start it with the cluster's primary key in the gossip key file",
				"keyring", path, "gossip_key", Fingerprint(key), "primary", Fingerprint(keys[0]))
		}
		kr, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			return nil, fmt.Errorf("cluster: keyring file %s: %v", path, err)
		}
		log.Info("gossip keyring restored", "keyring", path, "keys", len(keys), "primary", Fingerprint(keys[0]))
		return kr, nil
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("cluster: reading the keyring file: %w", err)
	}
	if key == nil {
		return nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cluster: creating %s: %w", filepath.Dir(path), err)
	}
	data, _ := json.Marshal([]string{base64.StdEncoding.EncodeToString(key)})
	if err := writeFileAtomic(path, data, 0o600); err != nil {
		return nil, fmt.Errorf("cluster: writing the keyring file: %w", err)
	}
	return memberlist.NewKeyring([][]byte{key}, key)
}

// KeyringReport is the cluster's answer to a keyring operation: how many
// nodes answered and, per key fingerprint, how many hold it.
type KeyringReport struct {
	// Nodes is the number of members serf knows; Responses and Errors
	// count the answers.
	Nodes, Responses, Errors int
	// Keys maps a key's fingerprint to the number of nodes holding it;
	// Primary to the number using it as primary key.
	Keys, Primary map[string]int
	// Messages holds the error message of each node that failed, by id.
	Messages map[string]string
}

// report converts serf's answer, replacing keys with fingerprints.
func report(r *serf.KeyResponse) KeyringReport {
	fp := func(m map[string]int) map[string]int {
		out := map[string]int{}
		for k, n := range m {
			raw, err := base64.StdEncoding.DecodeString(k)
			if err != nil {
				continue
			}
			out[Fingerprint(raw)] += n
		}
		return out
	}
	if r == nil {
		return KeyringReport{}
	}
	return KeyringReport{
		Nodes: r.NumNodes, Responses: r.NumResp, Errors: r.NumErr,
		Keys: fp(r.Keys), Primary: fp(r.PrimaryKeys), Messages: maps.Clone(r.Messages),
	}
}

// keyOpAttempts bounds the repeats of a keyring change that some members
// did not answer in time (serf's query timeout): installing, using and
// removing a key are idempotent on a memberlist keyring, so a repeat only
// reaches the late ones again.
const keyOpAttempts = 3

// ErrNotEncrypted: a keyring operation on a cluster whose gossip is not
// encrypted. Its members have no keyring to list or change; a gossip key
// is given at start (cluster.gossip_key_file), to every node, never
// rotated in.
var ErrNotEncrypted = errors.New("cluster: gossip encryption is not enabled: the cluster runs without a gossip key, so its members have no keyring to list or change (start every node with cluster.gossip_key_file to encrypt gossip)")

// ErrKeyringFailed: a keyring operation that some members failed; the
// report's Messages holds each one's answer.
var ErrKeyringFailed = errors.New("cluster: gossip keyring operation failed")

// keyringQuery runs query, a keyring query of serf's key manager that
// goes to every member, and asks again when no member failed but some
// did not answer in time. ErrNotEncrypted on a node without a keyring
// (a keyless node cannot talk to an encrypted one, so its cluster is
// keyless); ErrKeyringFailed, with each node's message, when some
// members failed.
func (m *Membership) keyringQuery(what string, query func() (*serf.KeyResponse, error)) (KeyringReport, error) {
	if m.keyring == nil {
		return KeyringReport{}, ErrNotEncrypted
	}
	var r *serf.KeyResponse
	var err error
	for attempt := 1; ; attempt++ {
		r, err = query()
		if err == nil || r == nil || r.NumErr > 0 || r.NumResp >= r.NumNodes || attempt == keyOpAttempts {
			break
		}
		m.log.Warn("gossip keyring: some members did not answer in time; asking again", "op", what,
			"responses", r.NumResp, "nodes", r.NumNodes, "attempt", attempt)
	}
	rep := report(r)
	if err == nil {
		return rep, nil
	}
	if r == nil {
		return rep, fmt.Errorf("%w: %s: %v", ErrKeyringFailed, what, err)
	}
	var msgs []string
	for _, id := range slices.Sorted(maps.Keys(rep.Messages)) {
		msgs = append(msgs, id+": "+rep.Messages[id])
	}
	detail := fmt.Sprintf("%d of %d nodes failed", rep.Errors, rep.Nodes)
	if rep.Errors == 0 {
		detail = fmt.Sprintf("%d of %d nodes answered", rep.Responses, rep.Nodes)
	}
	if len(msgs) > 0 {
		detail += " (" + strings.Join(msgs, "; ") + ")"
	}
	return rep, fmt.Errorf("%w: %s: %s", ErrKeyringFailed, what, detail)
}

// keyOp runs one keyring change of serf's key manager: it goes to every
// member, each of which changes its keyring and rewrites its keyring file
// (K2), and waits for the answers (serf's query timeout, a few seconds).
// It is logged as a change only when every member made it.
func (m *Membership) keyOp(what string, op func(string) (*serf.KeyResponse, error), key string) (KeyringReport, error) {
	k, err := ParseKey(key)
	if err != nil {
		return KeyringReport{}, err
	}
	rep, err := m.keyringQuery(what+" key "+Fingerprint(k), func() (*serf.KeyResponse, error) {
		return op(base64.StdEncoding.EncodeToString(k))
	})
	if err != nil {
		if !errors.Is(err, ErrNotEncrypted) {
			m.log.Warn("gossip keyring change failed", "op", what, "key", Fingerprint(k), "nodes", rep.Nodes,
				"responses", rep.Responses, "errors", rep.Errors, "messages", rep.Messages)
		}
		return rep, err
	}
	m.log.Info("gossip keyring changed", "op", what, "key", Fingerprint(k), "nodes", rep.Nodes, "responses", rep.Responses)
	return rep, nil
}

// InstallKey adds key (base64) to every member's keyring; gossip still
// uses the primary key. Rotation: InstallKey(new), UseKey(new),
// RemoveKey(old).
func (m *Membership) InstallKey(key string) (KeyringReport, error) {
	return m.keyOp("install", m.serf.KeyManager().InstallKey, key)
}

// UseKey makes an installed key the primary key of every member.
func (m *Membership) UseKey(key string) (KeyringReport, error) {
	return m.keyOp("use", m.serf.KeyManager().UseKey, key)
}

// RemoveKey removes a key that is not primary from every member.
func (m *Membership) RemoveKey(key string) (KeyringReport, error) {
	return m.keyOp("remove", m.serf.KeyManager().RemoveKey, key)
}

// ListKeys asks every member for its keys, again when some did not answer
// in time.
func (m *Membership) ListKeys() (KeyringReport, error) {
	return m.keyringQuery("list keys", m.serf.KeyManager().ListKeys)
}

// DigestKey is the key of the config digests: derived from the primary
// gossip key, so that a literal secret of a config file cannot be guessed
// from its digest in HBase; none without a key.
func (m *Membership) DigestKey() []byte {
	if m.keyring == nil {
		return nil
	}
	h := hmac.New(sha256.New, m.keyring.GetPrimaryKey())
	h.Write([]byte("snapstore config digest v1"))
	return h.Sum(nil)
}
