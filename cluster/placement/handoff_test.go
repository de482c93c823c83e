package placement

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/cluster"
)

// TestHandOffFollowsNoRedirect: a node's API address that answers a
// redirect gets no second request, signed or not: the hand-off fails as
// the node being unreachable (the run may go to another node), naming
// where the redirect pointed.
func TestHandOffFollowsNoRedirect(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer elsewhere.Close()
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirecting.Close()
	m := openNode(t, "a", t.TempDir(), func(c *cluster.Config) { c.API = strings.TrimPrefix(redirecting.URL, "http://") })
	eventually(t, 10*time.Second, "the node sees itself", func() bool { _, ok := m.Node(m.ID()); return ok })
	_, err := newHandOffClient(m).send(context.Background(), m.ID(), adapters.HandOff{Adapter: "x", RunID: "r1", Trigger: "api"})
	if !errors.Is(err, adapters.ErrNodeUnreachable) || !strings.Contains(err.Error(), "redirect to \""+elsewhere.URL) {
		t.Fatalf("hand-off to a redirecting node: %v, want ErrNodeUnreachable naming the redirect", err)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect was followed: %d requests where it pointed", n)
	}
}
