package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// screenshots is where TestConsole writes its screenshots of the main
// pages (docs/console/ through `make screenshots`); empty: the test's
// artifact directory.
var screenshots = flag.String("console.screenshots", "", "directory for TestConsole's screenshots (default: the test's artifact directory)")

// consoleRows is the size of the source table of TestConsole: enough rows,
// read in small chunks, for a run to last a few seconds, so that its page
// shows it running before it ends.
const consoleRows = 150000

// TestConsole drives headless Chromium through the web console of the
// built binary, with the shared MariaDB as the source, as a new user
// would: log in, create a data connection and an adapter through the
// forms, run it and watch the progress bar reach 100% without a reload,
// change a row at the source, run again, open the diff and find the
// changed column highlighted; visit every page; have a page of another
// origin post a form to the console and find it refused (403) with
// nothing changed; then, as a reader, find no admin action and get 403
// for an admin form posted anyway. The server serves HTTPS with a
// certificate of its own CA (snapstore cert). Tokens never appear in a
// page, a URL or the log. It takes screenshots of the main pages.
func TestConsole(t *testing.T) {
	e := getMySQLEnv(t)
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium is not installed, and CI must run the console test: `make deps` installs Debian's chromium (scripts/chromium.sh)")
		}
		t.Skip("Chromium is not installed (scripts/chromium.sh install, or `make deps`)")
	}
	start := time.Now()
	at := func() string { return "[" + time.Since(start).Round(100*time.Millisecond).String() + "] " }

	// The source: one table in a database of its own.
	const dbName = "e2e_console"
	root := e.open(t, "")
	for _, q := range []string{
		"DROP DATABASE IF EXISTS " + dbName,
		"CREATE DATABASE " + dbName,
		`CREATE TABLE ` + dbName + `.items (id INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL,
			price DECIMAL(10,2) NOT NULL, qty INT NOT NULL, note VARCHAR(40) NULL)`,
		fmt.Sprintf(`INSERT INTO %s.items SELECT seq, CONCAT('item ', seq), (seq %% 997) + 0.25, seq %% 50, IF(seq %% 3 = 0, NULL, 'n')
			FROM %s.seq_1_to_%d`, dbName, dbName, consoleRows),
		"CREATE TABLE " + dbName + ".small (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL)",
		"INSERT INTO " + dbName + ".small VALUES (1, 'a'), (2, 'b'), (3, 'c')",
	} {
		if _, err := root.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() { root.Exec("DROP DATABASE IF EXISTS " + dbName) })
	t.Logf("%ssource table of %d rows ready", at(), consoleRows)

	// HTTPS with a CA and a server certificate of snapstore cert, as an
	// operator without a CA of their own makes them; the test's API calls
	// trust the CA (SNAPSTORE_CA_FILE), Chromium the certificate's key
	// (below).
	pki := t.TempDir()
	cli(t, "cert", "ca", pki)
	cli(t, "cert", "server", pki, "--host", "127.0.0.1")
	spki := spkiHash(t, filepath.Join(pki, "server.crt"))

	const adminToken, readerToken, limitedToken = "e2e-admin-token-7Hq2x", "e2e-reader-token-Lm4Pz", "e2e-limited-token-Rw8Kd"
	p := startServerWith(t, e.Password, fmt.Sprintf(`tls: {cert_file: %s, key_file: %s}
auth:
  tokens:
    - {name: ops, token: env:E2E_ADMIN_TOKEN, role: admin}
    - {name: viewer, token: env:E2E_READER_TOKEN, role: reader}
    - {name: items-only, token: env:E2E_LIMITED_TOKEN, role: reader, datasets: [items]}
`, filepath.Join(pki, "server.crt"), filepath.Join(pki, "server.key")),
		"E2E_ADMIN_TOKEN="+adminToken, "E2E_READER_TOKEN="+readerToken, "E2E_LIMITED_TOKEN="+limitedToken, "SNAPSTORE_CA_FILE="+filepath.Join(pki, "ca.crt"))
	p.addSecret(adminToken)
	p.addSecret(readerToken)
	p.addSecret(limitedToken)
	p.token = adminToken // for the API calls of cleanup
	if !strings.HasPrefix(p.base, "https://") {
		t.Fatalf("the server serves at %s, want https", p.base)
	}
	t.Logf("%sserver at %s", at(), p.base)

	shotDir := *screenshots
	if shotDir == "" {
		shotDir = t.ArtifactDir()
	} else if err := os.MkdirAll(shotDir, 0o755); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// Chromium on Linux trusts the CAs of an NSS database, which
		// needs certutil (libnss3-tools) to write; rather than install
		// it, the tab accepts the server certificate's public key alone
		// (honoured with a user data dir). Every other certificate error
		// still fails, unlike --ignore-certificate-errors.
		chromedp.Flag("ignore-certificate-errors-spki-list", spki),
	)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	b := &consoleBrowser{t: t, ctx: bctx, base: p.base, shots: shotDir, secrets: []string{adminToken, readerToken, limitedToken, e.Password}}
	b.watchConsole()

	// Logged out, a page sends to the login form; the token goes in once.
	b.open("/")
	b.wantPath("/ui/login")
	b.login(adminToken)
	b.wantPath("/ui/")
	b.wantText("header .who", "ops")
	cookies, err := chromedp.Call(bctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	found, loginSession := false, ""
	for _, c := range cookies.Cookies {
		if c.Name == "snapstore_session" {
			found, loginSession = true, c.Value
			if !c.HTTPOnly || !c.Secure || c.SameSite != network.CookieSameSiteStrict || c.Path != "/ui/" || strings.Contains(c.Value, adminToken) {
				t.Errorf("session cookie: httpOnly %v secure %v sameSite %q path %q", c.HTTPOnly, c.Secure, c.SameSite, c.Path)
			}
		}
	}
	if !found {
		t.Fatalf("no session cookie after login: %+v", cookies.Cookies)
	}
	// The idle deadline in the cookie counts whole seconds: the forms
	// below must come a second after the login for it to move.
	time.Sleep(1100 * time.Millisecond)

	// A data connection through the form; the password is a reference to
	// the server's environment, never typed into the page.
	b.open("/ui/connections")
	b.click("#new-connection")
	b.wantPath("/ui/connections/new")
	b.fill(`input[name="name"]`, "mariadb")
	b.fill(`input[name="opt.host"]`, e.Host)
	b.fill(`input[name="opt.port"]`, e.Port)
	b.fill(`input[name="opt.user"]`, e.User)
	b.fill(`input[name="opt.password"]`, "env:"+pwEnv)
	b.fill(`input[name="opt.database"]`, dbName)
	b.fill(`input[name="opt.chunk_rows"]`, "200")
	b.shot("connection-form")
	b.submit("#connection-form")
	b.wantPath("/ui/connections/mariadb")
	b.wantText("#resources", "items")
	b.click("button.test")
	b.waitVisible(".test-ok")
	b.shot("connection")
	t.Logf("%sconnection created and tested", at())
	// Each request moves the session's idle deadline: the browser holds
	// a newer cookie of the same login.
	if got := sessionCookieOf(t, bctx); got == loginSession || !strings.HasPrefix(got, loginPart(loginSession)+".") {
		t.Errorf("the session cookie after the forms: %q, want the login's %q with a later idle deadline", got, loginSession)
	}

	// An adapter through the form: the connection select fetches the
	// resource list (htmx), then the form is sent.
	b.open("/ui/adapters/new")
	b.do(chromedp.SetValue(chromedp.CSS(`select[name="connection"]`), "mariadb"))
	b.eval(`document.querySelector('select[name="connection"]').dispatchEvent(new Event('change', {bubbles: true}))`)
	b.do(chromedp.WaitReady(chromedp.CSS(`#resource-list option[value="` + dbName + `.items"]`)))
	b.fill(`input[name="name"]`, "items")
	b.fill(`input[name="resource"]`, "items")
	b.fill(`input[name="schedule"]`, "@every 1h")
	b.fill(`input[name="min_versions"]`, "5")
	b.shot("adapter-form")
	// Laid out within the panel; a server alone leaves the cluster's
	// fields out.
	if got := b.formLayout(); got != "" {
		t.Errorf("the new-adapter form: %s", got)
	}
	b.submit("#adapter-form")
	b.wantPath("/ui/adapters")
	b.waitVisible(`tr[data-adapter="items"]`)
	t.Logf("%sadapter created", at())
	// An adapter with values in the cluster's fields shows them, within
	// the panel too: the long strategy notes and the partition key's
	// placeholder.
	p.jsonCall(t, http.StatusCreated, "PUT", "/v1/adapters/spread", map[string]any{
		"connection": "mariadb", "resource": "items", "dataset": "spread", "strategy": "partition-by-key", "transfer_compression": "all"}, nil)
	b.open("/ui/adapters/spread/edit")
	if got := b.formLayout(); got != "cluster fields" {
		t.Errorf("the form of an adapter with cluster fields: %q, want only the cluster fields there", got)
	}
	p.mustCall(t, http.StatusNoContent, "DELETE", "/v1/adapters/spread", nil)

	// Run it and watch the live panel until the run succeeds, in one page
	// (a marker set on the window would not survive a reload).
	first := b.runAndWatch(at)
	b.shot("run")

	// Change one row at the source and run again.
	if _, err := root.Exec("UPDATE " + dbName + ".items SET price = price + 1 WHERE id = 7"); err != nil {
		t.Fatal(err)
	}
	second := b.runAndWatch(at)
	if second <= first {
		t.Fatalf("second version %d after %d", second, first)
	}

	// The dataset, its versions, and the diff of the last run.
	b.open("/ui/")
	b.wantText(`tr[data-dataset="items"]`, fmt.Sprintf("%d", second))
	b.waitVisible(`tr[data-dataset="items"] svg.spark`)
	b.shot("datasets")
	b.click(`a[href="/ui/datasets/items"]`)
	b.waitVisible(fmt.Sprintf(`li[data-version="%d"].current`, second))
	b.shot("dataset")
	// The tag inputs carry the API's TagName pattern, and Chromium applies
	// it: a name with '/' is refused before it is sent.
	tagInput := fmt.Sprintf(`document.querySelector('li[data-version="%d"] input[name="tag"]')`, second)
	if got := b.eval(`(() => { const i = ` + tagInput + `; i.value = 'bad/tag'; const bad = i.validity.patternMismatch; i.value = 'good-1.x'; const good = i.validity.patternMismatch; i.value = ''; return bad + ',' + good })()`); got != "true,false" {
		t.Errorf("the tag input's pattern (mismatch for bad/tag, good-1.x): %s", got)
	}
	b.click(fmt.Sprintf(`li[data-version="%d"] a[href*="/diff?"]`, second))
	b.waitVisible("#diff")
	b.wantText("#diff-counts", "1 updated")
	changed := b.eval(`Array.from(document.querySelectorAll('#diff tr[data-op="update"] td.changed')).map(td => td.closest('tr').dataset.key + ':' + td.dataset.column).join(',')`)
	if changed != "7:price" {
		t.Errorf("highlighted cells of the diff: %q, want 7:price", changed)
	}
	b.wantText(`#diff td.changed[data-column="price"] ins`, "8.25")
	// The changed columns are named beside the key and above the table, in
	// sight without scrolling the wide table.
	b.wantText("#diff-changed", "price")
	if got := b.eval(`(() => { const td = document.querySelector('#diff tr[data-key="7"] td.changed-columns'); const r = td.getBoundingClientRect(); return td.textContent.trim() + ',' + (r.right <= window.innerWidth) })()`); got != "price,true" {
		t.Errorf("the changed columns beside the key: %q, want price, in sight", got)
	}
	b.shot("diff")
	t.Logf("%sdiff checked", at())

	// Every other page.
	b.open("/ui/datasets/items/rows")
	b.waitVisible("#rows")
	b.click("#next-page")
	b.wantURLHas(fmt.Sprintf("version=%d", second))
	b.open(fmt.Sprintf("/ui/datasets/items/rows?version=%d", first))
	b.fill(`input[name="key"]`, "7")
	b.submit("form.search")
	b.wantURLHas("key=7")
	if n := b.eval(`String(document.querySelectorAll('#rows tbody tr').length)`); n != "1" {
		t.Errorf("the key search for 7 shows %s rows", n)
	}
	b.wantText("#rows tbody", "7.25")
	b.shot("rows")
	b.open(fmt.Sprintf("/ui/datasets/items/rollback?version=%d", first))
	b.wantText("#rollback-effect", fmt.Sprintf("commits a new version with the content of version %d", first))
	b.wantText("#rollback-effect", fmt.Sprintf("versions after %d stay readable", first))
	b.open("/ui/runs?status=succeeded")
	b.waitVisible(`#runs tr[data-status="succeeded"]`)
	b.shot("runs")
	b.open("/ui/adapters")
	b.waitVisible(`tr[data-adapter="items"] .runs a`)
	b.shot("adapters")
	b.open("/ui/connections")
	b.waitVisible(`tr[data-connection="mariadb"]`)
	b.open("/ui/adapters/items/edit")
	b.waitVisible(`input[name="schedule"][value="@every 1h"]`)
	b.open("/ui/gc")
	b.click(`tr[data-dataset="items"] button.dry-run`)
	b.waitVisible(`.gc-report[data-dry-run="true"]`)
	b.shot("gc")
	b.open("/ui/api")
	b.wantText("#swagger-ui", "snapstore HTTP API")
	b.shotViewport("api") // the whole reference is long
	t.Logf("%severy page loaded", at())

	// A page of another origin (plain http, another port) posts a form to
	// the console while the admin is logged in: refused, nothing changed.
	b.checkConsole() // everything before the refused post
	b.crossSitePost(p, "/ui/adapters/items/delete")
	var items map[string]any
	p.jsonCall(t, http.StatusOK, "GET", "/v1/adapters/items", nil, &items) // not deleted
	var dsNow datasetInfo
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/items", nil, &dsNow)
	if dsNow.CurrentVersion != second {
		t.Errorf("after the cross-site post the current version is %d, want %d", dsNow.CurrentVersion, second)
	}
	if log, _ := os.ReadFile(p.logPath); !strings.Contains(string(log), "request refused: cross-origin") {
		t.Error("the server did not log the cross-site post as refused")
	}
	b.open("/ui/adapters")
	b.waitVisible(`tr[data-adapter="items"]`) // still logged in, the adapter there
	t.Logf("%scross-site post refused", at())

	// A second dataset, for the token limited to items not to see.
	p.createAdapter(t, map[string]any{"name": "other", "connection": "mariadb", "resource": "small", "dataset": "other"})
	p.mustRun(t, "other")

	// A reader: data, no admin action, and 403 for an admin form posted
	// anyway (from the page itself, with its session).
	b.click("header .who button")
	b.wantPath("/ui/login")
	b.login(readerToken)
	b.wantPath("/ui/") // the login's redirect, before a navigation aborts it
	b.open("/ui/")
	b.waitVisible(`tr[data-dataset="other"]`) // a reader of every dataset sees both
	b.waitVisible(`tr[data-dataset="items"]`)
	b.open("/ui/datasets/items")
	b.waitVisible(`li.version.current`)
	b.wantNone("a.rollback", ".tagform", "button.x")
	b.open("/ui/adapters")
	b.waitVisible(`tr[data-adapter="items"]`)
	b.wantNone("button.run-now", "a.edit", "button.delete", "#new-adapter")
	b.open("/ui/gc")
	b.wantNone("button.dry-run")
	b.wantNone(`header nav a[href="/ui/connections"]`)
	b.checkConsole() // everything before the refused posts
	b.mu.Lock()
	b.messages, b.refusedPosts = nil, true
	b.mu.Unlock()
	for path, form := range map[string]string{
		"/ui/datasets/items/rollback": fmt.Sprintf("version=%d", first),
		"/ui/adapters/items/run":      "",
		"/ui/adapters/items/delete":   "",
	} {
		status := b.eval(fmt.Sprintf(`fetch(%q, {method: 'POST', headers: {'Content-Type': 'application/x-www-form-urlencoded'}, body: %q}).then(r => String(r.status))`, path, form))
		if status != "403" {
			t.Errorf("a reader's POST %s: status %s, want 403", path, status)
		}
	}
	var ds datasetInfo
	p.jsonCall(t, http.StatusOK, "GET", "/v1/datasets/items", nil, &ds)
	if ds.CurrentVersion != second {
		t.Errorf("after the reader's refused posts the current version is %d, want %d", ds.CurrentVersion, second)
	}
	time.Sleep(200 * time.Millisecond) // let the console messages of the posts arrive
	b.checkConsole()
	b.mu.Lock()
	b.messages, b.refusedPosts = nil, false
	b.mu.Unlock()
	t.Logf("%sreader checked", at())

	// A token limited to the dataset items (auth.tokens[].datasets): the
	// datasets page lists items alone, and the page of the dataset other
	// answers as the page of a dataset that does not exist.
	b.click("header .who button")
	b.wantPath("/ui/login")
	b.login(limitedToken)
	b.wantPath("/ui/")
	b.wantText("header .who", "items-only")
	b.open("/ui/")
	b.waitVisible(`tr[data-dataset="items"]`)
	if got := b.eval(`Array.from(document.querySelectorAll('tr[data-dataset]')).map(tr => tr.dataset.dataset).join(',')`); got != "items" {
		t.Errorf("the datasets page of a token limited to items lists %q, want items alone", got)
	}
	b.checkConsole() // everything before the pages answered 404
	missing := func(name string) (status, text string) {
		b.open("/ui/datasets/" + name)
		status = b.eval(`String(performance.getEntriesByType('navigation')[0].responseStatus)`)
		text = strings.ReplaceAll(b.eval(`document.querySelector('main').innerText`), name, "NAME")
		return status, text
	}
	otherStatus, otherText := missing("other")
	noneStatus, noneText := missing("no-such-dataset")
	if otherStatus != "404" || otherStatus != noneStatus || otherText != noneText {
		t.Errorf("a limited token's page of a dataset outside its grant: %s %q; of one that does not exist: %s %q", otherStatus, otherText, noneStatus, noneText)
	}
	b.open("/ui/datasets/items")
	b.waitVisible(`li.version.current`)
	b.mu.Lock()
	b.messages = nil // the two pages answered 404, as they must
	b.mu.Unlock()
	t.Logf("%slimited token checked; %d pages looked at, screenshots in %s", at(), b.pages, shotDir)
}

// spkiHash returns the base64 SHA-256 of the public key of the PEM
// certificate in path, as --ignore-certificate-errors-spki-list takes it.
func spkiHash(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// crossSitePost serves, from a second server (plain http on another
// port, so another origin and another site), a page whose form posts
// itself to the console's path, opens it in the tab, and requires the
// post refused with 403: the session cookie is SameSite=Strict, and the
// console refuses a cross-site post (Sec-Fetch-Site) whatever it carries.
// The tab ends on the refusal page; the console messages of the refused
// post are allowed, any other fails the test.
func (b *consoleBrowser) crossSitePost(p *proc, path string) {
	b.t.Helper()
	target := b.base + path
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>win a prize</title>
<form id="f" method="post" action="%s"><input type="hidden" name="confirm" value="items"></form>
<script>document.getElementById('f').submit()</script>`, html.EscapeString(target))
	}))
	defer evil.Close()
	if strings.HasPrefix(b.base, strings.TrimSuffix(evil.URL, "/")) {
		b.t.Fatalf("the other site %s is the console's origin %s", evil.URL, b.base)
	}
	b.mu.Lock()
	b.messages, b.refusedPosts = nil, true
	b.mu.Unlock()
	b.do(chromedp.Navigate(evil.URL + "/"))
	b.waitURL(func(loc string) bool { return loc == target }, "the console's "+path+" after the other site's post")
	// The navigation's status, as the tab received it.
	if got := b.eval(`String(performance.getEntriesByType('navigation')[0].responseStatus)`); got != "403" {
		b.t.Errorf("a cross-site form post to %s: status %s, want 403", path, got)
	}
	time.Sleep(200 * time.Millisecond) // let the console messages of the post arrive
	b.checkConsole()
	b.mu.Lock()
	b.messages, b.refusedPosts = nil, false
	b.mu.Unlock()
}

// consoleBrowser is one Chromium tab on the console.
type consoleBrowser struct {
	t       *testing.T
	ctx     context.Context
	base    string
	shots   string
	secrets []string
	pages   int
	// refusedPosts is set once the test posts forms it expects refused.
	refusedPosts bool
	mu           sync.Mutex // guards messages
	messages     []chromedp.ConsoleMessage
}

// do runs actions, failing the test on an error.
func (b *consoleBrowser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.t.Fatalf("browser at %s: %v", loc, err)
	}
}

// open loads a console path and checks the page.
func (b *consoleBrowser) open(path string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + path))
	b.checkPage()
}

// checkPage checks the loaded page: no secret in its HTML or its URL.
func (b *consoleBrowser) checkPage() {
	b.t.Helper()
	b.pages++
	// A click may have started a navigation: read again until the page
	// holds still.
	var html, loc string
	var err error
	for try := 0; try < 50; try++ {
		if html, err = chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`)); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("reading the page: %v", err)
	}
	loc, _ = chromedp.Run(b.ctx, chromedp.Location())
	for _, s := range b.secrets {
		if strings.Contains(html, s) || strings.Contains(loc, s) {
			b.t.Fatalf("page %s holds a secret", loc)
		}
	}
}

func (b *consoleBrowser) click(sel string) {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible))
	b.checkPage()
}

func (b *consoleBrowser) submit(sel string) {
	b.t.Helper()
	b.do(chromedp.Submit(chromedp.CSS(sel)))
	b.do(chromedp.WaitReady(chromedp.CSS("body")))
	b.checkPage()
}

func (b *consoleBrowser) fill(sel, text string) {
	b.t.Helper()
	b.do(chromedp.Clear(chromedp.CSS(sel)), chromedp.SendKeys(chromedp.CSS(sel), text))
}

func (b *consoleBrowser) waitVisible(sel string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(sel)))
}

// eval evaluates JavaScript (awaiting a promise) and returns its result as
// text.
func (b *consoleBrowser) eval(js string) string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[any](js, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", js, err)
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// wantText waits for sel and requires its text to hold want.
func (b *consoleBrowser) wantText(sel, want string) {
	b.t.Helper()
	b.waitVisible(sel)
	got, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatal(err)
	}
	if !strings.Contains(got, want) {
		b.t.Fatalf("%s reads %q, want %q in it", sel, got, want)
	}
}

// wantNone requires that no element matches any of sels.
func (b *consoleBrowser) wantNone(sels ...string) {
	b.t.Helper()
	for _, sel := range sels {
		if n := b.eval(fmt.Sprintf(`String(document.querySelectorAll(%q).length)`, sel)); n != "0" {
			b.t.Errorf("%s elements match %s, want none", n, sel)
		}
	}
}

// wantPath waits (a navigation may be under way) until the tab's path is
// path.
func (b *consoleBrowser) wantPath(path string) {
	b.t.Helper()
	b.waitURL(func(loc string) bool {
		u, err := url.Parse(loc)
		return err == nil && u.Path == path
	}, "path "+path)
}

// wantURLHas waits until the tab's URL holds s.
func (b *consoleBrowser) wantURLHas(s string) {
	b.t.Helper()
	b.waitURL(func(loc string) bool { return strings.Contains(loc, s) }, "an URL with "+s)
}

func (b *consoleBrowser) waitURL(ok func(string) bool, what string) {
	b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		loc, err := chromedp.Run(b.ctx, chromedp.Location())
		if err == nil && ok(loc) {
			b.do(chromedp.WaitReady(chromedp.CSS("body")))
			b.checkPage()
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("at %s, want %s", loc, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// login sends token through the login form.
func (b *consoleBrowser) login(token string) {
	b.t.Helper()
	b.waitVisible(`input[name="token"]`)
	b.fill(`input[name="token"]`, token)
	b.submit(`form[action="/ui/login"]`)
}

// runAndWatch clicks Run now for the adapter items and watches the run's
// page until the run ends: the live panel must show the run going, then
// reach 100% and succeeded, all in the page first loaded. It returns the
// committed version.
func (b *consoleBrowser) runAndWatch(at func() string) int64 {
	b.t.Helper()
	b.open("/ui/adapters")
	b.click(`tr[data-adapter="items"] button.run-now`)
	b.waitVisible("#live")
	if !strings.HasPrefix(b.eval(`location.pathname`), "/ui/runs/r") {
		b.t.Fatalf("Run now led to %s", b.eval(`location.pathname`))
	}
	b.eval(`window.consoleTestMarker = 'same page'`)
	var seen []string
	running := 0
	deadline := time.Now().Add(2 * time.Minute)
	for {
		state := b.eval(`(() => { const l = document.getElementById('live'); const bar = document.getElementById('progress');
			return l.dataset.status + ' ' + (bar ? (bar.getAttribute('aria-valuenow') || '?') : '-') })()`)
		if len(seen) == 0 || seen[len(seen)-1] != state {
			seen = append(seen, state)
		}
		status, _, _ := strings.Cut(state, " ")
		if status == "running" {
			running++
		} else {
			break
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the run did not end within 2 minutes; states %v", seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Logf("%srun page states: %v", at(), seen)
	if got := seen[len(seen)-1]; got != "succeeded 100.0" {
		b.t.Fatalf("the run ended as %q, want succeeded at 100.0; states %v", got, seen)
	}
	if running == 0 {
		b.t.Fatalf("the run page never showed the run going (states %v): the run ended before its page loaded", seen)
	}
	if m := b.eval(`window.consoleTestMarker || 'reloaded'`); m != "same page" {
		b.t.Fatal("the run page reloaded instead of updating in place")
	}
	b.checkPage()
	b.waitVisible(`#phases tr[data-phase="commit"]`)
	text, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS("#live .state")))
	if err != nil {
		b.t.Fatal(err)
	}
	m := regexp.MustCompile(`version (\d+)`).FindStringSubmatch(text)
	if m == nil {
		b.t.Fatalf("the ended run names no version: %q", text)
	}
	var v int64
	fmt.Sscan(m[1], &v)
	return v
}

// formLayout checks the adapter form on the page: it names each fieldset
// wider than the form, each input whose placeholder is cut off, and
// "cluster fields" when the cluster's fieldset is shown; "" when none.
func (b *consoleBrowser) formLayout() string {
	b.t.Helper()
	return b.eval(`(() => {
		const form = document.querySelector('#adapter-form').getBoundingClientRect(), bad = [];
		for (const f of document.querySelectorAll('#adapter-form fieldset')) {
			if (f.getBoundingClientRect().right > form.right + 0.5 || f.scrollWidth > f.clientWidth) bad.push('fieldset ' + f.querySelector('legend').textContent);
		}
		const ctx = document.createElement('canvas').getContext('2d');
		for (const i of document.querySelectorAll('#adapter-form input[placeholder]')) {
			const st = getComputedStyle(i);
			ctx.font = st.font;
			if (ctx.measureText(i.placeholder).width > i.clientWidth - parseFloat(st.paddingLeft) - parseFloat(st.paddingRight)) bad.push('placeholder of ' + i.name);
		}
		if (document.querySelector('#cluster-fields')) bad.push('cluster fields');
		return bad.join(', ');
	})()`)
}

// shot saves a PNG screenshot of the whole page as name.png.
func (b *consoleBrowser) shot(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// shotViewport saves a PNG screenshot of what the window shows.
func (b *consoleBrowser) shotViewport(name string) {
	b.t.Helper()
	buf, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), buf, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// watchConsole collects what the pages write to the browser console
// until the tab's context ends.
func (b *consoleBrowser) watchConsole() {
	messages := chromedp.Console(b.ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
}

// checkConsole fails the test on any error the pages logged: an uncaught
// exception, a script or style the Content-Security-Policy refused, a
// failed request other than the reader's refused posts.
func (b *consoleBrowser) checkConsole() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.messages {
		if m.Type != chromedp.ConsoleError && !m.IsException() {
			continue
		}
		txt := m.String()
		if strings.Contains(txt, "403") && b.refusedPosts {
			continue
		}
		b.t.Errorf("browser console %s: %s (%s:%d)", m.Type, txt, m.URL, m.Line+1)
	}
}

// sessionCookieOf returns the value of the browser's session cookie.
func sessionCookieOf(t *testing.T, ctx context.Context) string {
	t.Helper()
	cookies, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cookies.Cookies {
		if c.Name == "snapstore_session" {
			return c.Value
		}
	}
	t.Fatal("no session cookie")
	return ""
}

// loginPart is the part of a session cookie value the login made, which
// the idle deadline that follows it does not change.
func loginPart(session string) string {
	parts := strings.Split(session, ".")
	if len(parts) < 4 {
		return session
	}
	return strings.Join(parts[:4], ".")
}
