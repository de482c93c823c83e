//go:build unix

package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestGetFile_ModeOfARedirect: --out files get the mode a shell redirect
// gives (0666 less the umask), not os.CreateTemp's 0600, and hold the
// whole answer.
func TestGetFile_ModeOfARedirect(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("PAR1"))
	}))
	defer ts.Close()
	base, _ := url.Parse(ts.URL)
	c := &apiClient{base: base, hc: ts.Client()}
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	name := filepath.Join(t.TempDir(), "out.parquet")
	if err := c.getFile(context.Background(), name, "/x", nil, ""); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640 under umask 027", st.Mode().Perm())
	}
	if b, _ := os.ReadFile(name); string(b) != "PAR1" {
		t.Errorf("content %q", b)
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(name), ".out.parquet.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
