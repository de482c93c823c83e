package adapters

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/snapstore/snapstore/api"
)

// fakeRuns is a runStarter whose runs take dur of (synctest) time and fail
// when fail says so. Events are recorded as "trigger@offset" from t0.
type fakeRuns struct {
	t0   time.Time
	dur  time.Duration
	fail func(n int) bool

	mu      sync.Mutex
	n       int
	events  []string
	skipped []string
	current *fakeRun
	runs    map[string]*fakeRun
}

type fakeRun struct {
	rec  RunRecord
	done chan struct{}
}

func newFakeRuns(dur time.Duration) *fakeRuns {
	return &fakeRuns{t0: time.Now(), dur: dur, runs: map[string]*fakeRun{}}
}

func (f *fakeRuns) off() time.Duration { return time.Since(f.t0).Round(time.Millisecond) }

func (f *fakeRuns) StartRun(ctx context.Context, adapter string, opts RunOptions) (RunRecord, error) {
	trigger := opts.Trigger
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.current != nil {
		return f.current.rec, fmt.Errorf("%w: run %s", ErrRunInProgress, f.current.rec.ID)
	}
	f.n++
	n := f.n
	r := &fakeRun{rec: RunRecord{ID: fmt.Sprintf("run%d", n), Adapter: adapter, Trigger: trigger, Status: RunRunning, Start: time.Now()}, done: make(chan struct{})}
	f.current = r
	f.runs[r.rec.ID] = r
	f.events = append(f.events, fmt.Sprintf("%s@%v", trigger, f.off()))
	go func() {
		time.Sleep(f.dur)
		f.mu.Lock()
		r.rec.Status = RunSucceeded
		if f.fail != nil && f.fail(n) {
			r.rec.Status = RunFailed
		}
		f.current = nil
		f.mu.Unlock()
		close(r.done)
	}()
	return r.rec, nil
}

func (f *fakeRuns) WaitRun(ctx context.Context, id string) (RunRecord, error) {
	f.mu.Lock()
	r := f.runs[id]
	f.mu.Unlock()
	select {
	case <-r.done:
	case <-ctx.Done():
		return RunRecord{}, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return r.rec, nil
}

func (f *fakeRuns) recordSkipped(ctx context.Context, adapter, trigger, reason string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.skipped = append(f.skipped, fmt.Sprintf("%s@%v: %s", trigger, f.off(), reason))
}

func (f *fakeRuns) get() ([]string, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.events...), append([]string(nil), f.skipped...)
}

// stopAndDrain stops s and lets fake runs still sleeping finish, so the
// synctest bubble ends with no goroutine left.
func stopAndDrain(s *scheduler) {
	s.stop()
	time.Sleep(24 * time.Hour)
	synctest.Wait()
}

func mustSchedule(t *testing.T, spec string) cron.Schedule {
	t.Helper()
	s, err := parseSchedule(spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// C1: ticks start runs at the schedule's times.
func TestSchedulerTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRuns(10 * time.Second)
		s := newScheduler(f, testLogger())
		s.start()
		defer stopAndDrain(s)
		s.set("a", mustSchedule(t, "@every 1m"), 0, 0)
		time.Sleep(5*time.Minute + time.Second)
		synctest.Wait()
		ev, sk := f.get()
		want := "schedule@1m0s schedule@2m0s schedule@3m0s schedule@4m0s schedule@5m0s"
		if strings.Join(ev, " ") != want || len(sk) != 0 {
			t.Fatalf("events %v skipped %v, want %s", ev, sk, want)
		}
		if next, ok := s.nextRun("a"); !ok || next.Sub(f.t0) != 6*time.Minute {
			t.Fatalf("next run %v", next.Sub(f.t0))
		}
	})
}

// C2: a tick finding the previous run still going records a skipped run.
func TestSchedulerSkipsWhileRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRuns(150 * time.Second)
		s := newScheduler(f, testLogger())
		s.start()
		defer stopAndDrain(s)
		s.set("a", mustSchedule(t, "@every 1m"), 0, 0)
		time.Sleep(4*time.Minute + time.Second)
		synctest.Wait()
		ev, sk := f.get()
		if strings.Join(ev, " ") != "schedule@1m0s schedule@4m0s" {
			t.Fatalf("events %v", ev)
		}
		if len(sk) != 2 || !strings.HasPrefix(sk[0], "schedule@2m0s: previous run run1") || !strings.HasPrefix(sk[1], "schedule@3m0s: previous run run1") {
			t.Fatalf("skipped %q", sk)
		}
	})
}

// C3: failed runs are retried with doubling backoff, at most Retries
// times; the next scheduled failure gets its retries again.
func TestSchedulerRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRuns(time.Second)
		f.fail = func(n int) bool { return true }
		s := newScheduler(f, testLogger())
		s.start()
		defer stopAndDrain(s)
		s.set("a", mustSchedule(t, "@every 1h"), 2, 10*time.Second)
		time.Sleep(2*time.Hour + time.Minute)
		synctest.Wait()
		ev, _ := f.get()
		want := "schedule@1h0m0s retry@1h0m11s retry@1h0m32s schedule@2h0m0s retry@2h0m11s retry@2h0m32s"
		if strings.Join(ev, " ") != want {
			t.Fatalf("events %v\nwant %s", ev, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRuns(time.Second)
		f.fail = func(n int) bool { return n == 1 } // the first retry succeeds
		s := newScheduler(f, testLogger())
		s.start()
		defer stopAndDrain(s)
		s.set("a", mustSchedule(t, "@every 1h"), 3, 5*time.Second)
		time.Sleep(time.Hour + 10*time.Minute)
		synctest.Wait()
		ev, _ := f.get()
		if strings.Join(ev, " ") != "schedule@1h0m0s retry@1h0m6s" {
			t.Fatalf("events %v", ev)
		}
	})
}

// C4 and C5: entries follow set at once; stop ends everything.
func TestSchedulerFollowsChangesAndStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRuns(time.Second)
		s := newScheduler(f, testLogger())
		s.start()
		s.set("a", mustSchedule(t, "@every 1h"), 0, 0)
		time.Sleep(10 * time.Minute)
		s.set("a", mustSchedule(t, "*/30 * * * * *"), 0, 0) // seconds field
		time.Sleep(time.Minute + time.Second)
		synctest.Wait()
		ev, _ := f.get()
		if len(ev) != 2 || ev[0] != "schedule@10m30s" || ev[1] != "schedule@11m0s" {
			t.Fatalf("after replace: %v", ev)
		}
		s.set("a", nil, 0, 0)
		time.Sleep(time.Hour)
		synctest.Wait()
		if ev2, _ := f.get(); len(ev2) != 2 {
			t.Fatalf("after delete: %v", ev2)
		}
		if _, ok := s.nextRun("a"); ok {
			t.Fatal("deleted entry still has a next run")
		}
		s.set("b", mustSchedule(t, "@every 1m"), 5, time.Minute)
		stopAndDrain(s)
		synctest.Wait()
		if ev3, _ := f.get(); len(ev3) != 2 {
			t.Fatalf("runs after stop: %v", ev3)
		}
	})
}

// Cron spec forms robfig/cron/v3 accepts, and the time zone prefix.
func TestScheduleSpecs(t *testing.T) {
	base := time.Date(2026, 11, 29, 21, 7, 43, 0, time.UTC)
	cases := []struct {
		spec string
		next time.Time
	}{
		{"*/15 * * * *", time.Date(2026, 11, 29, 21, 15, 0, 0, time.UTC)},
		{"30 */5 * * * *", time.Date(2026, 11, 29, 21, 10, 30, 0, time.UTC)},
		{"@every 90s", base.Add(90 * time.Second)},
		{"@daily", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{"@hourly", time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)},
		{"CRON_TZ=Asia/Tokyo 0 9 * * *", time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)},
		{"TZ=America/New_York 0 0 1 * *", time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		s, err := parseSchedule(tc.spec)
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := s.Next(base); !got.Equal(tc.next) {
			t.Errorf("%s: next %v, want %v", tc.spec, got.UTC(), tc.next)
		}
	}
	for _, bad := range []string{"", "* * *", "61 * * * *", "@weekly-ish", "CRON_TZ=Nowhere/City * * * * *", "@every -1s", "0 0 30 2 *", "0 0 31 4 *"} {
		if _, err := parseSchedule(bad); !errors.Is(err, ErrBadSchedule) {
			t.Errorf("%q: %v, want ErrBadSchedule", bad, err)
		}
	}
}

// The Service wires adapters into the scheduler: NextRun follows create,
// replace and delete, and a tick during a run records a skipped run.
func TestServiceSchedules(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{Schedule: true})
	svc := ts.svc
	if _, err := svc.CreateConnection(ctx, api.Connection{Name: "lite", Type: "sqlite", Options: map[string]any{"path": path}}); err != nil {
		t.Fatal(err)
	}
	a, err := svc.CreateAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Schedule: "@every 1h"})
	if err != nil || a.NextRun == nil || a.NextRun.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("created %+v %v", a, err)
	}
	a, _, err = svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items"})
	if err != nil || a.NextRun != nil {
		t.Fatalf("unscheduled %+v %v", a, err)
	}
	if _, ok := svc.sched.nextRun("a"); ok {
		t.Fatal("entry left after the schedule was removed")
	}
	a, _, _ = svc.PutAdapter(ctx, api.Adapter{Name: "a", Connection: "lite", Resource: "items", Schedule: "0 3 * * *"})
	if a.NextRun == nil || a.NextRun.UTC().Hour() != 3 {
		t.Fatalf("rescheduled %+v", a)
	}
	// A tick while a run is going: skipped, with the reason.
	b := newBlock(ts, "a", 1)
	rec, err := svc.StartRun(ctx, "a", RunOptions{Trigger: "api"})
	if err != nil {
		t.Fatal(err)
	}
	<-b.reached
	svc.sched.mu.Lock()
	e := svc.sched.entries["a"]
	svc.sched.mu.Unlock()
	svc.sched.fire(e, "schedule", time.Now())
	close(b.release)
	svc.WaitRun(ctx, rec.ID)
	runs, _ := svc.ListRuns(ctx, "a", 10)
	if len(runs) != 2 || runs[0].Status != RunSkipped || runs[0].Trigger != "schedule" || !strings.Contains(runs[0].Error, rec.ID) || runs[1].Status != RunSucceeded {
		t.Fatalf("runs %+v", runs)
	}
	if err := svc.DeleteAdapter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, ok := svc.sched.nextRun("a"); ok {
		t.Fatal("entry left after delete")
	}
}

// TestRunOnStart: an adapter with run_on_start runs once when the
// scheduler starts, before its first tick; one without
// does not.
func TestRunOnStart(t *testing.T) {
	ctx := context.Background()
	path := newSQLiteFixture(t)
	ts := newStack(t, Options{
		Schedule:    true,
		Connections: []api.Connection{{Name: "src", Type: "sqlite", Options: map[string]any{"path": path}}},
		Adapters: []api.Adapter{
			{Name: "eager", Connection: "src", Resource: "items", Schedule: "@every 1h", RunOnStart: true},
			{Name: "lazy", Connection: "src", Resource: "cheap", KeyColumns: []string{"id"}, Schedule: "@every 1h"},
		},
	})
	runs, err := ts.svc.ListRuns(ctx, "eager", 0)
	if err != nil || len(runs) != 1 || runs[0].Trigger != "start" {
		t.Fatalf("eager runs: %+v %v", runs, err)
	}
	end, err := ts.svc.WaitRun(ctx, runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	mustSucceed(t, end)
	if runs, _ := ts.svc.ListRuns(ctx, "lazy", 0); len(runs) != 0 {
		t.Fatalf("lazy ran at start: %+v", runs)
	}
}

// TestSchedulePeriod: the gap between the next two starts.
func TestSchedulePeriod(t *testing.T) {
	at := time.Date(2026, 3, 4, 10, 20, 0, 0, time.UTC)
	for spec, want := range map[string]time.Duration{"@every 90s": 90 * time.Second, "0 * * * *": time.Hour, "@daily": 24 * time.Hour, "0 3 * * 1": 7 * 24 * time.Hour} {
		if got, err := SchedulePeriod(spec, at); err != nil || got != want {
			t.Errorf("SchedulePeriod(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	if _, err := SchedulePeriod("nope", at); !errors.Is(err, ErrBadSchedule) {
		t.Errorf("bad spec: %v", err)
	}
}
