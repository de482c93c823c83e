package notify

import "time"

// Event names, the "event" of a body and the values of a webhook's events.
const (
	// EventRunFailed: a run ended failed; code and error say why.
	EventRunFailed = "run_failed"
	// EventGuardRefused: a guard (allow_empty, max_shrink) refused a run.
	EventGuardRefused = "guard_refused"
	// EventStale: the dataset has had no succeeded or verified run for
	// Options.StaleAfter periods of its adapter's schedule.
	EventStale = "stale"
	// EventRecovered: the first succeeded run after a failed or refused
	// one, or after the dataset went stale.
	EventRecovered = "recovered"
	// EventTest: sent by POST /v1/notifications/webhooks/{name}/test to
	// that webhook alone, whatever its events.
	EventTest = "test"
)

// Events lists the events a webhook may subscribe to.
var Events = []string{EventRunFailed, EventGuardRefused, EventStale, EventRecovered}

// Event is the JSON body of a webhook request. It never holds a secret.
type Event struct {
	// ID identifies the event: the X-Snapstore-Delivery header, the same
	// on every attempt (N4).
	ID string `json:"id"`
	// Event is the event's name (EventRunFailed ...).
	Event string `json:"event"`
	// Time is when the event happened.
	Time    time.Time `json:"time"`
	Adapter string    `json:"adapter,omitempty"`
	Dataset string    `json:"dataset,omitempty"`
	// RunID, Status, Code and Error describe the run the event is about
	// (none for stale): its id, status (failed, succeeded), stable code
	// and error text.
	RunID  string `json:"run_id,omitempty"`
	Status string `json:"status,omitempty"`
	Code   string `json:"code,omitempty"`
	Error  string `json:"error,omitempty"`
	// StartedAt and EndedAt are the run's times.
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	// Version is the dataset version a recovered run committed (or
	// verified).
	Version int64 `json:"version,omitempty"`
	// LastSuccessAt is the end of the dataset's last succeeded run, for
	// stale (absent when it never had one); Schedule its adapter's
	// schedule and StaleAfter the periods it was allowed.
	LastSuccessAt *time.Time `json:"last_success_at,omitempty"`
	Schedule      string     `json:"schedule,omitempty"`
	StaleAfter    int        `json:"stale_after,omitempty"`
	// Node is the cluster node that sent the event; empty alone.
	Node string `json:"node,omitempty"`
	// SnapstoreVersion is the sender's build version.
	SnapstoreVersion string `json:"snapstore_version,omitempty"`
}
