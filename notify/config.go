package notify

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Webhook is one contact point: where events are posted and how.
type Webhook struct {
	// Name identifies the webhook in adapters' notify lists, the delivery
	// log and the API; required, unique.
	Name string
	// URL is the http or https address posted to; required. It may hold
	// a token: it is never logged nor shown (N5).
	URL string
	// Secret keys the signature (signature.go): a literal, "env:NAME" or
	// "file:/abs/path" (secret.go), resolved at each send so a rotated
	// file is read without a restart; empty sends unsigned requests.
	Secret string
	// Events are the events sent; empty means all of Events.
	Events []string
	// Timeout bounds one attempt; default DefaultTimeout.
	Timeout time.Duration
	// MaxAttempts is how many times one event is tried at most; default
	// DefaultMaxAttempts.
	MaxAttempts int
}

// Defaults of a Webhook and of Options.
const (
	DefaultTimeout       = 10 * time.Second
	DefaultMaxAttempts   = 5
	DefaultStaleAfter    = 2
	DefaultStaleInterval = time.Minute
	DefaultQueueSize     = 1000
	DefaultWorkers       = 4
	DefaultRetention     = 30 * 24 * time.Hour
	DefaultBackoff       = time.Second
	DefaultMaxBackoff    = 5 * time.Minute
)

// maxTimeout bounds a webhook's timeout: an attempt holds one of the
// senders (workers) for as long, so a receiver that hangs under a longer
// one would hold up every webhook's deliveries behind it.
const maxTimeout = 5 * time.Minute

// Options configure a Notifier.
type Options struct {
	// Webhooks are the contact points.
	Webhooks []Webhook
	// Default names the webhooks of the adapters without a notify list
	// (api.Adapter.Notify nil); an adapter's empty list sends nothing
	// for it.
	Default []string
	// StaleAfter is how many periods of its schedule an adapter may go
	// without a succeeded or verified run before its dataset is stale;
	// default DefaultStaleAfter.
	StaleAfter int
	// StaleInterval is how often the stale loop looks; default
	// DefaultStaleInterval.
	StaleInterval time.Duration
	// QueueSize bounds the events waiting to be sent; default
	// DefaultQueueSize.
	QueueSize int
	// Workers is the number of senders; default DefaultWorkers.
	Workers int
	// Retention is how long the delivery log keeps an entry; default
	// DefaultRetention.
	Retention time.Duration
	// Backoff is the delay before the second attempt, doubled for each
	// later one up to MaxBackoff, with full jitter; defaults
	// DefaultBackoff and DefaultMaxBackoff.
	Backoff, MaxBackoff time.Duration
	// Version is the build version sent in bodies.
	Version string
	// Logger receives delivery failures and drops; nil discards.
	Logger *slog.Logger
	// Registerer registers the metrics (metrics.go); nil registers none.
	Registerer prometheus.Registerer
	// Client sends the requests; nil: a client of its own. Each
	// attempt's context bounds it by the webhook's Timeout.
	Client HTTPDoer
}

// HTTPDoer sends a request: *http.Client.
type HTTPDoer interface {
	Do(*http.Request) (*http.Response, error)
}

// ValidationError is a problem with one key of the options, named as the
// config file names it (webhooks[0].url).
type ValidationError struct {
	Key string
	Msg string
}

func (e *ValidationError) Error() string { return e.Key + ": " + e.Msg }

// Validate reports every problem of o, each a *ValidationError, joined.
func (o *Options) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ValidationError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	names := map[string]bool{}
	for i, w := range o.Webhooks {
		key := fmt.Sprintf("webhooks[%d]", i)
		switch {
		case w.Name == "":
			bad(key+".name", "required")
		case names[w.Name]:
			bad(key+".name", "duplicate webhook name %q", w.Name)
		case !validName(w.Name):
			bad(key+".name", "want letters, digits, '.', '_' and '-', not dots alone, got %q", w.Name)
		}
		names[w.Name] = true
		if u, err := url.Parse(w.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// The URL itself is not quoted: it may hold a token.
			bad(key+".url", "want an http:// or https:// URL")
		}
		if err := checkSecretRef(w.Secret); err != nil {
			bad(key+".secret", "%v", err)
		}
		for j, e := range w.Events {
			if !slices.Contains(Events, e) {
				bad(fmt.Sprintf("%s.events[%d]", key, j), "want one of run_failed, guard_refused, stale, recovered, got %q", e)
			}
		}
		if w.Timeout < 0 || w.Timeout > maxTimeout {
			bad(key+".timeout", "want 0 (default %s) to %s, got %s", DefaultTimeout, maxTimeout, w.Timeout)
		}
		if w.MaxAttempts < 0 || w.MaxAttempts > 100 {
			bad(key+".max_attempts", "want 0 (default %d) to 100, got %d", DefaultMaxAttempts, w.MaxAttempts)
		}
	}
	for i, n := range o.Default {
		if !names[n] {
			bad(fmt.Sprintf("default[%d]", i), "no webhook named %q", n)
		}
	}
	if o.StaleAfter < 0 {
		bad("stale_after", "must not be negative")
	}
	if o.StaleInterval < 0 {
		bad("stale_interval", "must not be negative")
	}
	if o.QueueSize < 0 {
		bad("queue_size", "must not be negative")
	}
	if o.Retention < 0 {
		bad("retention", "must not be negative")
	}
	return errors.Join(errs...)
}

// validName reports whether s may name a webhook: it appears in a path
// (/v1/notifications/webhooks/{name}/test), so it is not dots alone,
// which browsers and curl drop from a path as dot-segments (RFC 3986,
// 5.2.4).
func validName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return strings.Trim(s, ".") != ""
}

// withDefaults returns o with its zero fields defaulted.
func (o Options) withDefaults() Options {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(n *int, v int) {
		if *n <= 0 {
			*n = v
		}
	}
	defInt(&o.StaleAfter, DefaultStaleAfter)
	defInt(&o.QueueSize, DefaultQueueSize)
	defInt(&o.Workers, DefaultWorkers)
	def(&o.StaleInterval, DefaultStaleInterval)
	def(&o.Retention, DefaultRetention)
	def(&o.Backoff, DefaultBackoff)
	def(&o.MaxBackoff, DefaultMaxBackoff)
	o.Webhooks = slices.Clone(o.Webhooks)
	for i := range o.Webhooks {
		w := &o.Webhooks[i]
		def(&w.Timeout, DefaultTimeout)
		defInt(&w.MaxAttempts, DefaultMaxAttempts)
		if len(w.Events) == 0 {
			w.Events = Events
		}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
