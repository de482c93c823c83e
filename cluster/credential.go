package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The cluster credential: how one node proves to another's HTTP API that it
// is a member (K8). No new shared state: it is an HMAC keyed by a key
// derived from the gossip key, which every member holds already (K2), over
// the request (method, path, a SHA-256 of the body), the sending node's id
// and the time. The receiver checks it against every key of its keyring,
// so that a request signed with the primary key during a rotation is still
// accepted by a node that has not made that key primary yet.
//
//	Authorization: Snapstore-Node <node id> <unix seconds> <base64url MAC>
//
// A credential is good for credentialSkew either side of the receiver's
// clock, and once: the receiver remembers the MACs it accepted for that
// long, so that a request seen on the wire cannot be replayed.

// CredentialScheme is the Authorization scheme of the cluster credential.
const CredentialScheme = "Snapstore-Node"

// credentialSkew bounds the difference between the clocks of two nodes
// that a credential tolerates.
const credentialSkew = 2 * time.Minute

// credentialLabel separates the derived key's use from gossip encryption.
const credentialLabel = "snapstore cluster credential v1"

// Errors of the credential check, for the server to answer 401.
var (
	// ErrNoCredential: the request carries no cluster credential.
	ErrNoCredential = errors.New("cluster: no cluster credential")
	// ErrBadCredential: the credential is malformed, expired, replayed,
	// signed with a key this node does not hold, or by a node that is not
	// a member.
	ErrBadCredential = errors.New("cluster: bad cluster credential")
	// ErrNoGossipKey: the cluster runs without a gossip key, so that no
	// credential can be made or checked.
	ErrNoGossipKey = errors.New("cluster: the cluster has no gossip key, hence no cluster credential (set cluster.gossip_key_file)")
)

// deriveKey returns the credential key of a gossip key.
func deriveKey(gossipKey []byte) []byte {
	m := hmac.New(sha256.New, gossipKey)
	m.Write([]byte(credentialLabel))
	return m.Sum(nil)
}

// credentialMAC is the MAC of a request under key.
func credentialMAC(key []byte, node string, unix int64, method, path string, body []byte) []byte {
	sum := sha256.Sum256(body)
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%d\n%s\n%s\n", node, unix, method, path)
	m.Write(sum[:])
	return m.Sum(nil)
}

// replays remembers the MACs accepted within credentialSkew.
type replays struct {
	mu   sync.Mutex
	seen map[string]time.Time // MAC -> when it may be forgotten
}

// first reports whether mac was not accepted before, and remembers it
// until until.
func (r *replays) first(mac string, now, until time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]time.Time{}
	}
	for k, t := range r.seen {
		if now.After(t) {
			delete(r.seen, k)
		}
	}
	if _, ok := r.seen[mac]; ok {
		return false
	}
	r.seen[mac] = until
	return true
}

// SignRequest adds this node's cluster credential to r, whose body is
// body. ErrNoGossipKey without a keyring.
func (m *Membership) SignRequest(r *http.Request, body []byte) error {
	if m.keyring == nil {
		return ErrNoGossipKey
	}
	unix := m.now().Unix()
	mac := credentialMAC(deriveKey(m.keyring.GetPrimaryKey()), m.id, unix, r.Method, r.URL.EscapedPath(), body)
	r.Header.Set("Authorization", fmt.Sprintf("%s %s %d %s", CredentialScheme, m.id, unix, base64.RawURLEncoding.EncodeToString(mac)))
	return nil
}

// VerifyRequest checks the cluster credential of r, whose body is body,
// and returns the id of the node that signed it: a member this node knows,
// not failed nor left (K8). ErrNoCredential, ErrBadCredential,
// ErrNoGossipKey.
func (m *Membership) VerifyRequest(r *http.Request, body []byte) (string, error) {
	if m.keyring == nil {
		return "", ErrNoGossipKey
	}
	h := r.Header.Get("Authorization")
	scheme, rest, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, CredentialScheme) {
		return "", ErrNoCredential
	}
	f := strings.Fields(rest)
	if len(f) != 3 {
		return "", fmt.Errorf("%w: want %s <node> <unix seconds> <mac>", ErrBadCredential, CredentialScheme)
	}
	node := f[0]
	unix, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return "", fmt.Errorf("%w: bad time %q", ErrBadCredential, f[1])
	}
	got, err := base64.RawURLEncoding.DecodeString(f[2])
	if err != nil {
		return "", fmt.Errorf("%w: the MAC is not base64url", ErrBadCredential)
	}
	now := m.now()
	at := time.Unix(unix, 0)
	if d := now.Sub(at); d > credentialSkew || d < -credentialSkew {
		return "", fmt.Errorf("%w: made at %s, %s from this node's clock (at most %s)", ErrBadCredential, at.UTC().Format(time.RFC3339), d.Round(time.Second), credentialSkew)
	}
	ok := false
	for _, k := range m.keyring.GetKeys() {
		if hmac.Equal(got, credentialMAC(deriveKey(k), node, unix, r.Method, r.URL.EscapedPath(), body)) {
			ok = true
		}
	}
	if !ok {
		return "", fmt.Errorf("%w: node %s signed with a key this node does not hold", ErrBadCredential, node)
	}
	if n, known := m.Node(node); !known || n.State == Failed || n.State == Left {
		return "", fmt.Errorf("%w: node %s is not a member this node sees alive", ErrBadCredential, node)
	}
	if !m.replays.first(f[2], now, now.Add(2*credentialSkew)) {
		return "", fmt.Errorf("%w: a credential of node %s used twice", ErrBadCredential, node)
	}
	return node, nil
}
