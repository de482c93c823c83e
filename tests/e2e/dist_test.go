package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// distVersion is the version the archives of TestDist are stamped with.
const distVersion = "v0.0.0-e2e"

// TestDist builds the release archive of this platform twice with make
// dist and finds the same bytes, and the sum SHA256SUMS lists; the archive
// holds the files the README promises, owned by root with fixed modes and
// times; the binary inside reports the stamped version and serves
// /healthz on a loopback port; the systemd unit inside passes
// systemd-analyze verify where that command exists.
func TestDist(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: make dist builds the binary again with -trimpath")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make dist needs make, which is not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("snapstore-%s-%s-%s", distVersion, runtime.GOOS, runtime.GOARCH)
	build := func() (archive []byte, sums string) {
		t.Helper()
		dir := t.TempDir()
		cmd := exec.Command("make", "-s", "dist", "DISTDIR="+dir, "VERSION="+distVersion,
			"DIST_PLATFORMS="+runtime.GOOS+"/"+runtime.GOARCH)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make dist: %v\n%s", err, out)
		}
		archive, err := os.ReadFile(filepath.Join(dir, name+".tar.gz"))
		if err != nil {
			t.Fatal(err)
		}
		s, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		if err != nil {
			t.Fatal(err)
		}
		return archive, string(s)
	}
	first, sums := build()
	second, sums2 := build()
	if !bytes.Equal(first, second) || sums != sums2 {
		t.Fatalf("two builds of %s differ: %d and %d bytes\n%s%s", name, len(first), len(second), sums, sums2)
	}
	sum := sha256.Sum256(first)
	if want := hex.EncodeToString(sum[:]) + "  " + name + ".tar.gz\n"; sums != want {
		t.Fatalf("SHA256SUMS:\n%s\nwant:\n%s", sums, want)
	}

	dir := t.TempDir()
	unpackDist(t, first, dir, name)
	bin := filepath.Join(dir, name, "snapstore")

	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || string(out) != "snapstore "+distVersion+"\n" {
			t.Fatalf("snapstore %v: %v %q", args, err, out)
		}
	}
	serveDist(t, bin)

	// The README's links to docs/ resolve in the archive.
	readme, err := os.ReadFile(filepath.Join(dir, name, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`\]\((docs/[^)#]*)`).FindAllStringSubmatch(string(readme), -1) {
		if _, err := os.Stat(filepath.Join(dir, name, filepath.FromSlash(m[1]))); err != nil {
			t.Errorf("the README links to %s, which the archive does not hold: %v", m[1], err)
		}
	}

	t.Run("systemd-analyze verify", func(t *testing.T) {
		if _, err := exec.LookPath("systemd-analyze"); err != nil {
			t.Skip("systemd-analyze is not installed: the unit is not verified")
		}
		unit, err := os.ReadFile(filepath.Join(dir, name, "snapstore.service"))
		if err != nil {
			t.Fatal(err)
		}
		// verify checks that ExecStart's binary exists: point it at the
		// unpacked one.
		text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/snapstore ", "ExecStart="+bin+" ", 1)
		if text == string(unit) {
			t.Fatal("the unit's ExecStart does not start /usr/local/bin/snapstore")
		}
		path := filepath.Join(t.TempDir(), "snapstore.service")
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
		}
	})
}

// unpackDist unpacks archive into dir, checking that it holds exactly the
// release's files under one directory called name, owned by uid and gid 0
// with one modification time, the binary alone executable.
func unpackDist(t *testing.T, archive []byte, dir, name string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	var mtime time.Time
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if mtime.IsZero() {
			mtime = h.ModTime
		}
		wantMode := int64(0o644)
		switch {
		case h.Typeflag == tar.TypeDir:
			wantMode = 0o755
		case h.Name == name+"/snapstore":
			wantMode = 0o755
		}
		if h.Uid != 0 || h.Gid != 0 || h.Mode != wantMode || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: uid %d gid %d mode %o mtime %s; want 0 0 %o %s", h.Name, h.Uid, h.Gid, h.Mode, h.ModTime, wantMode, mtime)
		}
		path := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, os.FileMode(h.Mode)); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"", "CHANGELOG.md", "LICENSE", "README.md", "snapstore", "snapstore.sample.yaml", "snapstore.service", "docs/", "docs/rfcs/", "docs/snapstore.sample.yaml"}
	docs, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	rfcs, err := filepath.Glob(filepath.Join("..", "..", "docs", "rfcs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(docs, rfcs...) {
		files = append(files, strings.TrimPrefix(filepath.ToSlash(f), "../../"))
	}
	var want []string
	for _, f := range files {
		want = append(want, name+"/"+f)
	}
	sort.Strings(names)
	sort.Strings(want)
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Fatalf("archive holds\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
}

// serveDist starts bin's serve on a free loopback port and a fresh data
// directory, reads /healthz, and stops it with SIGTERM.
func serveDist(t *testing.T, bin string) {
	t.Helper()
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "serve", "--listen", addr, "--data", filepath.Join(dir, "data"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	cmd.Dir = dir
	logf, err := os.Create(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	log := func() string {
		b, _ := os.ReadFile(logf.Name())
		return string(b)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	}()

	client := &http.Client{Timeout: 5 * time.Second}
	var health struct{ Status, Version string }
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("serve exited (%v) before answering /healthz:\n%s", waitErr, log())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no /healthz answer within 60s (last: %v):\n%s", err, log())
		}
	}
	if health.Status != "ok" || health.Version != distVersion {
		t.Fatalf("/healthz: %+v, want status ok, version %s", health, distVersion)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		if waitErr != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s", waitErr, log())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60s of SIGTERM:\n%s", log())
	}
}
