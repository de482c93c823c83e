package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/snapstore/snapstore/notify"
)

// NotifyConfig configures run notifications (notify.Options): webhooks
// that get an event when a run fails, a guard refuses a run, a dataset
// goes stale past its schedule, or it recovers.
type NotifyConfig struct {
	// Webhooks are the contact points, named.
	Webhooks []WebhookConfig `yaml:"webhooks"`
	// Default names the webhooks of the adapters without a notify list
	// of their own (adapters defined through the API among them); default
	// none.
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

// AdapterNotifyConfig is an entry of an adapter's notify list: the name
// of a webhook of notify.webhooks (in the file a plain string), or a
// webhook inline (with a url), named "ADAPTER-N" unless it has a name.
type AdapterNotifyConfig WebhookConfig

// notifyOptions converts the notify section and the adapters' notify
// lists; keys[i] is the key in the file of the options' webhook i.
func (c *Config) notifyOptions() (o notify.Options, keys []string) {
	n := c.Notify
	o = notify.Options{Default: n.Default, StaleAfter: n.StaleAfter, StaleInterval: n.StaleInterval,
		QueueSize: n.QueueSize, Workers: n.Workers, Retention: n.Retention, Version: buildVersion()}
	for i, w := range n.Webhooks {
		o.Webhooks = append(o.Webhooks, notify.Webhook(w))
		keys = append(keys, fmt.Sprintf("notify.webhooks[%d]", i))
	}
	for i, a := range c.Adapters {
		if a.Notify == nil {
			continue
		}
		if o.Adapters == nil {
			o.Adapters = map[string][]string{}
		}
		names := []string{}
		for j, e := range a.Notify {
			if e.URL == "" {
				names = append(names, e.Name)
				continue
			}
			w := notify.Webhook(e)
			if w.Name == "" {
				w.Name = fmt.Sprintf("%s-%d", a.Name, j+1)
			}
			o.Webhooks = append(o.Webhooks, w)
			keys = append(keys, fmt.Sprintf("adapters[%d].notify[%d]", i, j))
			names = append(names, w.Name)
		}
		o.Adapters[a.Name] = names
	}
	return o, keys
}

// validateNotify reports the problems of the notify section and of the
// adapters' notify lists, each naming its key.
func (c *Config) validateNotify() []error {
	o, keys := c.notifyOptions()
	known := map[string]bool{}
	for _, w := range o.Webhooks {
		known[w.Name] = true
	}
	var errs []error
	// Names in adapters' lists are checked here, with their keys.
	for i, a := range c.Adapters {
		for j, e := range a.Notify {
			if e.URL == "" && !known[e.Name] {
				errs = append(errs, c.keyError(fmt.Sprintf("adapters[%d].notify[%d]", i, j), fmt.Sprintf("no webhook named %q in notify.webhooks", e.Name)))
			}
		}
	}
	o.Adapters = nil
	for _, err := range joined(o.Validate()) {
		var ve *notify.ValidationError
		if !errors.As(err, &ve) {
			errs = append(errs, err)
			continue
		}
		key := "notify." + ve.Key
		if rest, ok := strings.CutPrefix(ve.Key, "webhooks["); ok {
			var k int
			if _, err := fmt.Sscanf(rest, "%d]", &k); err == nil && k < len(keys) {
				key = keys[k] + rest[strings.IndexByte(rest, ']')+1:]
			}
		}
		errs = append(errs, c.keyError(key, ve.Msg))
	}
	return errs
}

// newNotifier returns the notifier of the configuration, or nil when it
// has no webhook.
func (c *Config) newNotifier(log *slog.Logger, reg prometheus.Registerer) (*notify.Notifier, error) {
	o, _ := c.notifyOptions()
	if len(o.Webhooks) == 0 {
		return nil, nil
	}
	o.Logger, o.Registerer = log, reg
	return notify.New(o)
}
