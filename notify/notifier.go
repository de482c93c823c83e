package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// ErrWebhookNotFound: no webhook has the name given.
var ErrWebhookNotFound = errors.New("notify: webhook does not exist")

// Runs is what a Notifier reads of the adapters: *adapters.Service.
type Runs interface {
	ListAdapters() []adapters.Adapter
	ListRuns(ctx context.Context, adapter string, limit int) ([]adapters.RunRecord, error)
}

// Notifier sends the events of runs to webhooks. Create it with New, give
// it to adapters.Options.Observer, call Start once the store and the
// adapters service are open, and Close before the store closes. Safe for
// concurrent use.
type Notifier struct {
	o       Options
	log     *slog.Logger
	metrics *metrics
	hooks   map[string]*Webhook
	client  HTTPDoer
	now     func() time.Time // test hook; time.Now

	// ended queues the records RunEnded gets for the event loop; queue
	// the attempts waiting for a sender. Both bounded (N1).
	ended chan adapters.RunRecord
	queue chan *attempt
	// handled counts the ended runs the event loop has turned into events
	// (or found none in), so tests can wait for a run's end to be handled.
	handled atomic.Int64

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the loops and senders

	// db is the store of the delivery log and the stale marks; nil until
	// Start, read-only after it.
	db *snapshot.DB

	// mu guards the fields below.
	mu      sync.Mutex
	started bool
	closed  bool
	svc     Runs
	node    string
	owns    func(adapter string) bool
	since   time.Time // when Start was called: the base of a never-run adapter
}

// New returns a notifier with o (Options.Validate's checks). Until Start
// it only queues what RunEnded gets.
func New(o Options) (*Notifier, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	n := &Notifier{
		o:      o,
		log:    o.Logger.With("logger", "notify"),
		hooks:  map[string]*Webhook{},
		client: o.Client,
		now:    time.Now,
		ended:  make(chan adapters.RunRecord, o.QueueSize),
		queue:  make(chan *attempt, o.QueueSize),
	}
	if n.client == nil {
		n.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	for i := range o.Webhooks {
		n.hooks[o.Webhooks[i].Name] = &n.o.Webhooks[i]
	}
	n.metrics = newMetrics(o.Registerer, func() float64 { return float64(len(n.queue) + len(n.ended)) })
	n.ctx, n.cancel = context.WithCancel(context.Background())
	return n, nil
}

// Start starts the senders, the event loop over the runs of svc, the
// stale loop and the delivery log's retention, over db. node is this
// node's cluster id ("" alone); owns reports whether this node fires the
// scheduled ticks of an adapter (nil: it fires all), the one node whose
// stale loop looks at it (N2).
func (n *Notifier) Start(db *snapshot.DB, svc Runs, node string, owns func(adapter string) bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.started || n.closed {
		return
	}
	n.db = db
	n.started, n.svc, n.node, n.owns, n.since = true, svc, node, owns, n.now()
	for range n.o.Workers {
		n.wg.Add(1)
		go n.sender()
	}
	n.wg.Add(3)
	go n.eventLoop()
	go n.staleLoop()
	go n.trimLoop()
}

// Close stops the loops and senders and waits for them within ctx. Events
// still queued and retries not yet due are given up (logged).
func (n *Notifier) Close(ctx context.Context) error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.cancel()
	done := make(chan struct{})
	go func() { n.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return fmt.Errorf("notify: closing: %w", ctx.Err())
	}
	if k := len(n.queue) + len(n.ended); k > 0 {
		n.log.Warn("notifications given up at shutdown", "queued", k)
	}
	return nil
}

// RunEnded queues rec for the event loop (adapters.RunObserver). It never
// blocks: a full queue drops the record (N1).
func (n *Notifier) RunEnded(rec adapters.RunRecord) {
	if rec.Status != adapters.RunFailed && rec.Status != adapters.RunSucceeded {
		return
	}
	select {
	case n.ended <- rec:
	default:
		n.metrics.dropped.Inc()
		n.log.Error("notification queue full; run event dropped", "adapter", rec.Adapter, "run", rec.ID, "status", rec.Status, "queue_size", n.o.QueueSize)
	}
}

// eventLoop turns ended runs into events.
func (n *Notifier) eventLoop() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case rec := <-n.ended:
			n.runEvent(rec)
			n.handled.Add(1)
		}
	}
}

// runEvent sends the event, if any, of the ended run rec.
func (n *Notifier) runEvent(rec adapters.RunRecord) {
	ev := Event{Adapter: rec.Adapter, Dataset: rec.Dataset, RunID: rec.ID, Status: string(rec.Status),
		Code: rec.Code, Error: rec.Error, StartedAt: timePtr(rec.Start), EndedAt: rec.End}
	switch {
	case rec.Status == adapters.RunFailed && rec.Code == "guard_refused":
		ev.Event = EventGuardRefused
	case rec.Status == adapters.RunFailed:
		ev.Event = EventRunFailed
	case n.recovered(rec):
		ev.Event = EventRecovered
		ev.Version = rec.Version
	default:
		return
	}
	n.publish(ev)
}

// recovered reports whether the succeeded run rec is the first success
// after a failed run of its adapter or after its dataset went stale; it
// clears the stale mark.
func (n *Notifier) recovered(rec adapters.RunRecord) bool {
	ctx, cancel := context.WithTimeout(n.ctx, 30*time.Second)
	defer cancel()
	stale := n.clearStale(ctx, rec.Adapter)
	runs, err := n.svc.ListRuns(ctx, rec.Adapter, 50)
	if err != nil {
		n.log.Warn("reading the runs of an adapter", "adapter", rec.Adapter, "err", err)
		return stale
	}
	for _, r := range runs { // newest first
		if r.ID == rec.ID || !r.Start.Before(rec.Start) {
			continue
		}
		switch r.Status {
		case adapters.RunFailed:
			return true
		case adapters.RunSucceeded:
			return stale
		}
	}
	return stale
}

// publish queues one attempt of ev for each webhook of its adapter that
// subscribes to it.
func (n *Notifier) publish(ev Event) {
	for _, name := range n.webhooksOf(ev.Adapter) {
		w := n.hooks[name]
		if w == nil {
			// An adapter defined through the API may name a webhook the
			// configuration does not have (any more).
			n.log.Warn("adapter's notify list names no webhook", "adapter", ev.Adapter, "webhook", name, "event", ev.Event)
			continue
		}
		if !slices.Contains(w.Events, ev.Event) {
			continue
		}
		n.enqueue(n.newAttempt(w, ev))
	}
}

// webhooksOf names the webhooks of adapter: the notify list of its active
// definition, read at each event so that a changed definition counts at
// once, or Options.Default when it has none (nil).
func (n *Notifier) webhooksOf(adapter string) []string {
	n.mu.Lock()
	svc := n.svc
	n.mu.Unlock()
	if svc != nil {
		for _, a := range svc.ListAdapters() {
			if a.Name == adapter && a.Status == "active" && a.Notify != nil {
				return a.Notify
			}
		}
	}
	return n.o.Default
}

// newAttempt completes ev and returns the first attempt of it to w.
func (n *Notifier) newAttempt(w *Webhook, ev Event) *attempt {
	ev.ID = newEventID()
	if ev.Time.IsZero() {
		ev.Time = n.now().UTC()
	}
	n.mu.Lock()
	ev.Node = n.node
	n.mu.Unlock()
	ev.SnapstoreVersion = n.o.Version
	return &attempt{hook: w, ev: ev, n: 1}
}

// enqueue queues a for a sender, or drops it when the queue is full (N1),
// with an entry in the delivery log, or the notifier closed.
func (n *Notifier) enqueue(a *attempt) {
	if n.ctx.Err() == nil {
		select {
		case n.queue <- a:
			return
		default:
		}
	}
	n.metrics.dropped.Inc()
	if n.ctx.Err() != nil {
		// Close: the store may be closing too; the log line alone.
		n.log.Warn("notification given up at shutdown", "webhook", a.hook.Name, "event", a.ev.Event, "adapter", a.ev.Adapter, "attempt", a.n)
		return
	}
	n.log.Error("notification dropped", "webhook", a.hook.Name, "event", a.ev.Event, "adapter", a.ev.Adapter, "attempt", a.n, "reason", "queue full", "queue_size", n.o.QueueSize)
	n.record(a, Delivery{Outcome: OutcomeDropped, Error: "queue full"})
}

// sender sends the queued attempts until Close.
func (n *Notifier) sender() {
	defer n.wg.Done()
	for {
		select {
		case <-n.ctx.Done():
			return
		case a := <-n.queue:
			n.deliver(a)
		}
	}
}

// deliver makes attempt a, records it, and schedules the next one when it
// failed and attempts remain (N4).
func (n *Notifier) deliver(a *attempt) {
	d := n.send(n.ctx, a)
	switch {
	case d.Outcome == OutcomeDelivered:
	case a.n < a.hook.MaxAttempts && retryable(d.StatusCode):
		d.Outcome = OutcomeRetry
		delay := backoff(n.o.Backoff, n.o.MaxBackoff, a.n)
		next := &attempt{hook: a.hook, ev: a.ev, body: a.body, n: a.n + 1}
		time.AfterFunc(delay, func() { n.enqueue(next) })
	default:
		d.Outcome = OutcomeFailed
	}
	n.metrics.attempts.WithLabelValues(a.hook.Name, d.Outcome).Inc()
	if d.Outcome != OutcomeDelivered {
		n.log.Warn("notification attempt failed", "webhook", a.hook.Name, "event", a.ev.Event, "adapter", a.ev.Adapter,
			"run", a.ev.RunID, "attempt", a.n, "max_attempts", a.hook.MaxAttempts, "outcome", d.Outcome, "status_code", d.StatusCode, "err", d.Error)
	}
	n.record(a, d)
}

// record completes d with what a says and appends it to the delivery
// log; a failed append is logged.
func (n *Notifier) record(a *attempt, d Delivery) {
	d.Time = n.now().UTC()
	d.Webhook, d.Event, d.EventID = a.hook.Name, a.ev.Event, a.ev.ID
	d.Adapter, d.Dataset, d.RunID, d.Node = a.ev.Adapter, a.ev.Dataset, a.ev.RunID, a.ev.Node
	d.Attempt, d.MaxAttempts = a.n, a.hook.MaxAttempts
	ctx, cancel := context.WithTimeout(context.WithoutCancel(n.ctx), 10*time.Second)
	defer cancel()
	if err := appendDelivery(ctx, n.db, d); err != nil {
		n.log.Error("recording a notification delivery", "webhook", d.Webhook, "event", d.Event, "err", err)
	}
}

// Test sends a test event to webhook name now, once, whatever its events,
// records the attempt in the delivery log and returns it.
// ErrWebhookNotFound.
func (n *Notifier) Test(ctx context.Context, name string) (Delivery, error) {
	w := n.hooks[name]
	if w == nil {
		return Delivery{}, fmt.Errorf("%w: %q", ErrWebhookNotFound, name)
	}
	n.mu.Lock()
	started := n.started
	n.mu.Unlock()
	if !started {
		return Delivery{}, errors.New("notify: the notifier is not started")
	}
	one := *w
	one.MaxAttempts = 1
	a := n.newAttempt(&one, Event{Event: EventTest})
	d := n.send(ctx, a)
	if d.Outcome != OutcomeDelivered {
		d.Outcome = OutcomeFailed
	}
	n.metrics.attempts.WithLabelValues(w.Name, d.Outcome).Inc()
	n.record(a, d)
	d.Time = n.now().UTC()
	d.Webhook, d.Event, d.EventID, d.Node, d.Attempt, d.MaxAttempts = w.Name, EventTest, a.ev.ID, a.ev.Node, 1, 1
	return d, nil
}

// Webhooks returns the names of the webhooks, sorted.
func (n *Notifier) Webhooks() []string {
	names := make([]string, 0, len(n.hooks))
	for k := range n.hooks {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// newEventID returns a random event id (32 hex digits).
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// marshalEvent is the body of ev.
func marshalEvent(ev Event) ([]byte, error) { return json.Marshal(ev) }
