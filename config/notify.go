package config

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/notify"
)

// NotifyConfig configures run notifications (notify.Options): webhooks
// that get an event when a run fails, a guard refuses a run, a dataset
// goes stale past its schedule, or it recovers. An adapter names its
// webhooks in its own notify list (api.Adapter.Notify).
type NotifyConfig struct {
	// Webhooks are the contact points, named.
	Webhooks []WebhookConfig `yaml:"webhooks"`
	// Default names the webhooks of the adapters without a notify list
	// of their own; default none.
	Default []string `yaml:"default"`
	// StaleAfter is how many periods of its schedule an adapter may go
	// without a succeeded or verified run before its dataset is stale;
	// default 2.
	StaleAfter int `yaml:"stale_after"`
	// StaleInterval is how often staleness is checked; default 1m.
	StaleInterval time.Duration `yaml:"stale_interval"`
	// QueueSize bounds the events waiting to be sent; default 1000.
	QueueSize int `yaml:"queue_size"`
	// Workers is how many requests are sent at once; default 4.
	Workers int `yaml:"workers"`
	// Retention is how long the delivery log keeps an attempt; default
	// 720h (30 days).
	Retention time.Duration `yaml:"retention"`
}

// WebhookConfig is notify.Webhook in the file.
type WebhookConfig struct {
	Name string `yaml:"name"`
	// URL is the http:// or https:// address posted to; never logged.
	URL string `yaml:"url"`
	// Secret keys the signature: literal, env:NAME or file:/path.
	Secret string `yaml:"secret"`
	// Events are those sent: run_failed, guard_refused, stale,
	// recovered; default all.
	Events []string `yaml:"events"`
	// Timeout bounds one attempt; default 10s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxAttempts bounds the attempts of one event; default 5.
	MaxAttempts int `yaml:"max_attempts"`
}

// NotifyOptions converts the notify section into the notify package's
// options; the caller sets their Version. An adapter's notify list is
// read from its definition when an event is sent, so that adapters
// defined through the API have one too.
func (c *Config) NotifyOptions(log *slog.Logger, reg prometheus.Registerer) notify.Options {
	n := c.Notify
	o := notify.Options{Default: n.Default, StaleAfter: n.StaleAfter, StaleInterval: n.StaleInterval,
		QueueSize: n.QueueSize, Workers: n.Workers, Retention: n.Retention, Logger: log, Registerer: reg}
	for _, w := range n.Webhooks {
		o.Webhooks = append(o.Webhooks, notify.Webhook(w))
	}
	return o
}

// validateNotify reports the problems of the notify section and of the
// adapters' notify lists, each naming its key.
func (c *Config) validateNotify() []error {
	o := c.NotifyOptions(nil, nil)
	known := map[string]bool{}
	for _, w := range o.Webhooks {
		known[w.Name] = true
	}
	var errs []error
	for i, a := range c.Adapters {
		for j, name := range a.Notify {
			if !known[name] {
				errs = append(errs, c.keyError(fmt.Sprintf("adapters[%d].notify[%d]", i, j), fmt.Sprintf("no webhook named %q in notify.webhooks", name)))
			}
		}
	}
	for _, err := range joined(o.Validate()) {
		var ve *notify.ValidationError
		if !errors.As(err, &ve) {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.keyError("notify."+ve.Key, ve.Msg))
	}
	return errs
}
