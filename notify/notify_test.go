package notify

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/api"
	"github.com/snapstore/snapstore/internal/testenv"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store/pebble"
	_ "modernc.org/sqlite"
)

// testSecret is the webhooks' secret: it must appear in no body, log line
// or delivery entry (N5).
const testSecret = "whsec-7f3a9c1e"

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
	event  Event
}

// receiver is a real HTTP receiver: it answers with the statuses of
// answers in turn (then 200) and keeps what it gets.
type receiver struct {
	srv *httptest.Server
	got chan received

	mu      sync.Mutex
	answers []int
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{got: make(chan received, 100), answers: answers}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var ev Event
		if err := json.Unmarshal(body, &ev); err != nil {
			t.Errorf("receiver: body %q: %v", body, err)
		}
		r.got <- received{header: req.Header.Clone(), body: body, event: ev}
		r.mu.Lock()
		status := http.StatusOK
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// next returns the next request of event ev (others are skipped).
func (r *receiver) next(t *testing.T, ev string) received {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case g := <-r.got:
			if g.event.Event == ev {
				return g
			}
		case <-deadline:
			t.Fatalf("receiver got no %s event", ev)
		}
	}
}

// fixture is a store, a SQLite source, an adapters service and a notifier.
type fixture struct {
	db     *snapshot.DB
	svc    *adapters.Service
	n      *Notifier
	source string // the SQLite file
	logs   *testenv.SyncBuffer
}

// newFixture opens the fixture: adapter "items" reads table items of the
// source (3 rows) with schedule (none when ""), its runs notified to o's
// webhooks by default.
func newFixture(t *testing.T, o Options, schedule string) *fixture {
	return newFixtureOf(t, o, api.Adapter{Name: "items", Connection: "src", Resource: "items", Schedule: schedule})
}

// newFixtureOf is newFixture with the adapter items defined as a.
func newFixtureOf(t *testing.T, o Options, a api.Adapter) *fixture {
	schedule := a.Schedule
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	f := &fixture{source: filepath.Join(dir, "src.db"), logs: &testenv.SyncBuffer{}}
	sqliteExec(t, f.source, `CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)`,
		`INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	st, err := pebble.Open(filepath.Join(dir, "data"), pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.db, err = snapshot.Open(ctx, st, snapshot.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if o.Logger == nil {
		o.Logger = log
	}
	if o.Backoff == 0 {
		o.Backoff, o.MaxBackoff = 20*time.Millisecond, 100*time.Millisecond
	}
	if f.n, err = New(o); err != nil {
		t.Fatal(err)
	}
	f.svc, err = adapters.New(ctx, f.db, adapters.Options{
		Logger:      log,
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": f.source}}},
		Adapters:    []api.Adapter{a},
		Schedule:    schedule != "",
		Observer:    f.n,
	})
	if err != nil {
		t.Fatal(err)
	}
	f.n.Start(f.db, f.svc, "", nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.svc.Close(ctx); err != nil {
			t.Error(err)
		}
		if err := f.n.Close(ctx); err != nil {
			t.Error(err)
		}
		f.db.Close()
		st.Close()
	})
	return f
}

func sqliteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	// A scheduled run may be reading the file: wait for its lock rather
	// than fail with SQLITE_BUSY.
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// run runs adapter name to its end.
func (f *fixture) run(t *testing.T, name string) adapters.RunRecord {
	t.Helper()
	ctx := context.Background()
	rec, err := f.svc.StartRun(ctx, name, adapters.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rec, err = f.svc.WaitRun(ctx, rec.ID); err != nil {
		t.Fatal(err)
	}
	return rec
}

// deliveries returns the whole delivery log, newest first.
func (f *fixture) deliveries(t *testing.T, filter DeliveryFilter) []Delivery {
	t.Helper()
	filter.Limit = 1000
	ds, _, err := ListDeliveries(context.Background(), f.db, filter)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// waitDeliveries waits until the log holds an entry of event with
// outcome, and returns the log.
func (f *fixture) waitDeliveries(t *testing.T, event, outcome string) []Delivery {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		ds := f.deliveries(t, DeliveryFilter{Event: event})
		for _, d := range ds {
			if d.Outcome == outcome {
				return ds
			}
		}
	}
	t.Fatalf("no %s delivery of %s in the log: %+v", outcome, event, f.deliveries(t, DeliveryFilter{}))
	return nil
}

// checkSigned verifies g's signature as docs/notifications.md tells a
// receiver to, and that no secret is in its body.
func checkSigned(t *testing.T, g received) {
	t.Helper()
	if err := Verify([]byte(testSecret), g.header, g.body, time.Now(), 0); err != nil {
		t.Fatalf("signature: %v (headers %v)", err, g.header)
	}
	if err := Verify([]byte("other"), g.header, g.body, time.Now(), 0); err != ErrBadSignature {
		t.Fatalf("signature with another secret: %v", err)
	}
	tampered := bytes.Replace(g.body, []byte(`"items"`), []byte(`"other"`), 1)
	if err := Verify([]byte(testSecret), g.header, tampered, time.Now(), 0); err != ErrBadSignature {
		t.Fatalf("signature of a changed body: %v", err)
	}
	if err := Verify([]byte(testSecret), g.header, g.body, time.Now().Add(time.Hour), 0); err != ErrStale {
		t.Fatalf("signature an hour later: %v", err)
	}
	if bytes.Contains(g.body, []byte(testSecret)) {
		t.Fatalf("body holds the secret: %s", g.body)
	}
	if g.header.Get(HeaderDelivery) != g.event.ID || g.header.Get(HeaderEvent) != g.event.Event {
		t.Fatalf("headers %v for event %+v", g.header, g.event)
	}
}

// checkNoSecret fails when a secret is in the logs or the delivery log.
func (f *fixture) checkNoSecret(t *testing.T, secrets ...string) {
	t.Helper()
	all, _ := json.Marshal(f.deliveries(t, DeliveryFilter{}))
	for _, s := range secrets {
		if strings.Contains(f.logs.String(), s) {
			t.Errorf("log holds secret %q:\n%s", s, f.logs.String())
		}
		if bytes.Contains(all, []byte(s)) {
			t.Errorf("delivery log holds secret %q: %s", s, all)
		}
	}
}

func hook(name, url string) Webhook {
	return Webhook{Name: name, URL: url, Secret: "env:TEST_NOTIFY_SECRET", Timeout: 2 * time.Second, MaxAttempts: 3}
}

func TestRunFailed(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	rc := newReceiver(t)
	f := newFixture(t, Options{Webhooks: []Webhook{hook("ops", rc.srv.URL+"/hook?token=urltoken123")}, Default: []string{"ops"}, Version: "v-test"}, "")
	// The table no longer exists: the run fails.
	sqliteExec(t, f.source, `ALTER TABLE items RENAME TO items_old`)
	rec := f.run(t, "items")
	if rec.Status != adapters.RunFailed {
		t.Fatalf("run %+v", rec)
	}
	g := rc.next(t, EventRunFailed)
	checkSigned(t, g)
	ev := g.event
	if ev.Adapter != "items" || ev.Dataset != "items" || ev.RunID != rec.ID || ev.Status != "failed" || ev.Code != rec.Code || ev.Code == "" ||
		ev.Error == "" || ev.StartedAt == nil || ev.EndedAt == nil || ev.SnapstoreVersion != "v-test" {
		t.Fatalf("event %+v, run %+v", ev, rec)
	}
	ds := f.waitDeliveries(t, EventRunFailed, OutcomeDelivered)
	if d := ds[0]; d.Webhook != "ops" || d.Adapter != "items" || d.RunID != rec.ID || d.StatusCode != 200 || d.Attempt != 1 || d.EventID != ev.ID {
		t.Fatalf("delivery %+v", d)
	}
	f.checkNoSecret(t, testSecret, "urltoken123")
}

func TestGuardRefusedAndRecovered(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	rc := newReceiver(t)
	f := newFixture(t, Options{Webhooks: []Webhook{hook("ops", rc.srv.URL)}, Default: []string{"ops"}}, "")
	if rec := f.run(t, "items"); rec.Status != adapters.RunSucceeded {
		t.Fatalf("first run %+v", rec)
	}
	// allow_empty is false by default: an emptied table is refused.
	sqliteExec(t, f.source, `DELETE FROM items`)
	rec := f.run(t, "items")
	if rec.Code != "guard_refused" {
		t.Fatalf("run of the empty table %+v", rec)
	}
	g := rc.next(t, EventGuardRefused)
	checkSigned(t, g)
	if g.event.RunID != rec.ID || g.event.Code != "guard_refused" {
		t.Fatalf("event %+v", g.event)
	}
	sqliteExec(t, f.source, `INSERT INTO items VALUES (1, 'a'), (2, 'b'), (3, 'c')`)
	ok := f.run(t, "items")
	g = rc.next(t, EventRecovered)
	checkSigned(t, g)
	if g.event.RunID != ok.ID || g.event.Version != ok.Version || g.event.Status != "succeeded" {
		t.Fatalf("recovered %+v, run %+v", g.event, ok)
	}
	// Another success recovers nothing.
	f.run(t, "items")
	f.waitDeliveries(t, EventRecovered, OutcomeDelivered)
	time.Sleep(200 * time.Millisecond)
	if n := len(f.deliveries(t, DeliveryFilter{Event: EventRecovered})); n != 1 {
		t.Fatalf("%d recovered deliveries, want 1", n)
	}
	f.checkNoSecret(t, testSecret)
}

func TestStale(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	rc := newReceiver(t)
	f := newFixture(t, Options{Webhooks: []Webhook{hook("ops", rc.srv.URL)}, Default: []string{"ops"},
		StaleInterval: 100 * time.Millisecond}, "@every 1s")
	// The source fails from now on: no run succeeds for two periods.
	sqliteExec(t, f.source, `ALTER TABLE items RENAME TO items_old`)
	g := rc.next(t, EventStale)
	checkSigned(t, g)
	if g.event.Adapter != "items" || g.event.Schedule != "@every 1s" || g.event.StaleAfter != 2 || g.event.LastSuccessAt != nil {
		t.Fatalf("stale %+v", g.event)
	}
	// One event per episode, however long it lasts.
	time.Sleep(500 * time.Millisecond)
	if n := len(f.deliveries(t, DeliveryFilter{Event: EventStale})); n != 1 {
		t.Fatalf("%d stale deliveries, want 1", n)
	}
	sqliteExec(t, f.source, `ALTER TABLE items_old RENAME TO items`)
	g = rc.next(t, EventRecovered)
	checkSigned(t, g)
	if g.event.Adapter != "items" || g.event.Version == 0 {
		t.Fatalf("recovered %+v", g.event)
	}
	f.checkNoSecret(t, testSecret)
}

func TestReceiverDown(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a closed port: nothing answers
	f := newFixture(t, Options{Webhooks: []Webhook{hook("down", "http://"+addr+"/hook")}, Default: []string{"down"}}, "")
	sqliteExec(t, f.source, `DROP TABLE items`)
	f.run(t, "items")
	ds := f.waitDeliveries(t, EventRunFailed, OutcomeFailed)
	if len(ds) != 3 {
		t.Fatalf("%d attempts, want 3: %+v", len(ds), ds)
	}
	for i, d := range ds { // newest first
		want := OutcomeRetry
		if i == 0 {
			want = OutcomeFailed
		}
		if d.Attempt != 3-i || d.Outcome != want || d.StatusCode != 0 || !strings.Contains(d.Error, "refused") || d.MaxAttempts != 3 || d.EventID != ds[0].EventID {
			t.Fatalf("attempt %d: %+v", 3-i, d)
		}
	}
	// Backoff: the attempts are spaced (20ms base, equal jitter: at least
	// 10ms then 20ms).
	if gap := ds[0].Time.Sub(ds[2].Time); gap < 30*time.Millisecond {
		t.Fatalf("three attempts within %s", gap)
	}
	f.checkNoSecret(t, testSecret)
}

func TestRetryThenSuccess(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	rc := newReceiver(t, http.StatusInternalServerError, http.StatusInternalServerError)
	f := newFixture(t, Options{Webhooks: []Webhook{hook("flaky", rc.srv.URL)}, Default: []string{"flaky"}}, "")
	sqliteExec(t, f.source, `DROP TABLE items`)
	f.run(t, "items")
	first, second, third := rc.next(t, EventRunFailed), rc.next(t, EventRunFailed), rc.next(t, EventRunFailed)
	for _, g := range []received{first, second, third} {
		checkSigned(t, g)
		if g.event.ID != first.event.ID {
			t.Fatalf("attempts of one event with ids %s and %s", first.event.ID, g.event.ID)
		}
	}
	ds := f.waitDeliveries(t, EventRunFailed, OutcomeDelivered)
	if len(ds) != 3 || ds[2].StatusCode != 500 || ds[2].Outcome != OutcomeRetry || ds[1].StatusCode != 500 ||
		ds[0].StatusCode != 200 || ds[0].Attempt != 3 || ds[0].Outcome != OutcomeDelivered {
		t.Fatalf("log %+v", ds)
	}
	// The filters of the log.
	if n := len(f.deliveries(t, DeliveryFilter{Webhook: "other"})); n != 0 {
		t.Fatalf("webhook filter kept %d", n)
	}
	if n := len(f.deliveries(t, DeliveryFilter{Adapter: "items", Webhook: "flaky"})); n != 3 {
		t.Fatalf("adapter filter kept %d", n)
	}
	page, next, err := ListDeliveries(context.Background(), f.db, DeliveryFilter{Limit: 2})
	if err != nil || len(page) != 2 || next == "" {
		t.Fatalf("page %d %q %v", len(page), next, err)
	}
	if rest, _, err := ListDeliveries(context.Background(), f.db, DeliveryFilter{Limit: 2, After: next}); err != nil || len(rest) != 1 || rest[0].ID != ds[2].ID {
		t.Fatalf("second page %+v %v", rest, err)
	}
}

func TestWebhookChoice(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	a, b := newReceiver(t), newReceiver(t)
	hb := hook("b", b.srv.URL)
	hb.Events = []string{EventRecovered}
	f := newFixtureOf(t, Options{Webhooks: []Webhook{hook("a", a.srv.URL), hb}, Default: []string{"a"}},
		api.Adapter{Name: "items", Connection: "src", Resource: "items", Notify: []string{"b"}})
	sqliteExec(t, f.source, `DROP TABLE items`)
	f.run(t, "items")
	// items names b, which takes recovered alone: nobody gets run_failed.
	d, err := f.n.Test(context.Background(), "a")
	if err != nil || d.Outcome != OutcomeDelivered || d.StatusCode != 200 || d.Event != EventTest {
		t.Fatalf("test %+v %v", d, err)
	}
	if g := a.next(t, EventTest); g.event.Event != EventTest {
		t.Fatal(g.event)
	}
	select {
	case g := <-a.got:
		t.Fatalf("a got %+v", g.event)
	case g := <-b.got:
		t.Fatalf("b got %+v", g.event)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := f.n.Test(context.Background(), "nope"); err == nil {
		t.Fatal("test of an unknown webhook")
	}
}

func TestQueueFull(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	f := newFixture(t, Options{Webhooks: []Webhook{{Name: "slow", URL: srv.URL}}, Default: []string{"slow"}, QueueSize: 1, Workers: 1}, "")
	for range 4 {
		f.n.publish(Event{Event: EventRunFailed, Adapter: "items"})
	}
	// One in the sender, one queued, two dropped, each with an entry.
	ds := f.waitDeliveries(t, EventRunFailed, OutcomeDropped)
	if len(ds) != 2 || ds[0].Error != "queue full" {
		t.Fatalf("log %+v", ds)
	}
	if !strings.Contains(f.logs.String(), "notification dropped") {
		t.Fatalf("no log line of the drop:\n%s", f.logs.String())
	}
}

func TestValidate(t *testing.T) {
	o := Options{Webhooks: []Webhook{
		{Name: "a", URL: "ftp://x?token=hidden", Secret: "file:relative", Events: []string{"nope"}},
		{Name: "a", URL: "http://x"},
		{Name: "..", URL: "http://x"}, // a dot-segment of the test route's path
		{Name: ".", URL: "http://x"},
		{Name: "slow", URL: "http://x", Timeout: time.Hour}, // would hold a sender an hour
		{Name: "ok", URL: "http://x", Timeout: 5 * time.Minute},
	}, Default: []string{"zz"}}
	err := o.Validate()
	for _, want := range []string{"webhooks[0].url", "webhooks[0].secret", "webhooks[0].events[0]", "webhooks[1].name: duplicate", "default[0]",
		`webhooks[2].name: want letters, digits, '.', '_' and '-', not dots alone, got ".."`, `webhooks[3].name: want`,
		"webhooks[4].timeout: want 0 (default 10s) to 5m0s, got 1h0m0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "hidden") {
		t.Errorf("error quotes the URL: %v", err)
	}
	if strings.Contains(err.Error(), "webhooks[5]") {
		t.Errorf("a timeout of 5m refused: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	for k, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		for range 20 {
			if d := backoff(time.Second, 10*time.Second, k+1); d < want/2 || d > want {
				t.Fatalf("backoff after attempt %d: %s, want %s to %s", k+1, d, want/2, want)
			}
		}
	}
}

// TestStaleMarkMissed: a stale mark that the succeeded run after it did
// not clear (its node stopped first) is cleared by the owner's stale loop,
// which sends recovered in its stead, once.
func TestStaleMarkMissed(t *testing.T) {
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	rc := newReceiver(t)
	f := newFixture(t, Options{Webhooks: []Webhook{hook("ops", rc.srv.URL)}, Default: []string{"ops"},
		StaleInterval: 50 * time.Millisecond}, "@every 1h")
	ok := f.run(t, "items")
	// The run's end is handled (no mark to clear yet) before the mark is
	// written, so that only the stale loop can find the mark.
	for deadline := time.Now().Add(10 * time.Second); f.n.handled.Load() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run's end was not handled within 10s")
		}
	}
	mark, _ := json.Marshal(staleMark{Since: ok.Start.Add(-time.Minute)})
	if _, err := f.db.CompareAndSetRecord(context.Background(), staleRecord, "items", nil, mark); err != nil {
		t.Fatal(err)
	}
	g := rc.next(t, EventRecovered)
	checkSigned(t, g)
	if g.event.Adapter != "items" || g.event.LastSuccessAt == nil || !g.event.LastSuccessAt.Equal(*ok.End) {
		t.Fatalf("recovered %+v", g.event)
	}
	if _, err := f.db.GetRecord(context.Background(), staleRecord, "items"); err == nil {
		t.Fatal("the mark is still there")
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(f.deliveries(t, DeliveryFilter{Event: EventRecovered})); n != 1 {
		t.Fatalf("%d recovered deliveries, want 1", n)
	}
}

func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "secret")
	if err := os.WriteFile(p, []byte(testSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_NOTIFY_SECRET", testSecret)
	for _, ref := range []string{testSecret, "env:TEST_NOTIFY_SECRET", "file:" + p} {
		if b, err := resolveSecret(ref); err != nil || string(b) != testSecret {
			t.Errorf("%s: %q %v", ref, b, err)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"env:TEST_NOTIFY_UNSET", "file:" + fifo, "file:/dev/zero", "file:" + dir, "file:" + filepath.Join(dir, "none")} {
		_, err := resolveSecret(ref)
		if err == nil {
			t.Errorf("%s resolved", ref)
		} else if strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: %v", ref, err)
		}
	}
}
