package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// attempt is one attempt to deliver an event to a webhook.
type attempt struct {
	hook *Webhook
	ev   Event
	body []byte // the body, encoded at the first attempt
	n    int    // from 1
}

// maxResponseRead is how much of a receiver's answer is read (and
// discarded) so that its connection can be reused.
const maxResponseRead = 64 << 10

// send makes attempt a within ctx and the webhook's timeout and returns
// its delivery (Outcome delivered, or "" with StatusCode or Error set).
// The error text never names the URL nor the secret (N5).
func (n *Notifier) send(ctx context.Context, a *attempt) Delivery {
	start := time.Now()
	d := n.post(ctx, a)
	d.DurationSeconds = time.Since(start).Seconds()
	return d
}

func (n *Notifier) post(ctx context.Context, a *attempt) Delivery {
	if a.body == nil {
		b, err := marshalEvent(a.ev)
		if err != nil {
			return Delivery{Error: fmt.Sprintf("encoding the event: %v", err)}
		}
		a.body = b
	}
	secret, err := resolveSecret(a.hook.Secret)
	if err != nil {
		return Delivery{Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, a.hook.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.hook.URL, bytes.NewReader(a.body))
	if err != nil {
		return Delivery{Error: "the webhook's URL cannot be requested"}
	}
	ts := strconv.FormatInt(n.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "snapstore/"+n.o.Version)
	req.Header.Set(HeaderEvent, a.ev.Event)
	req.Header.Set(HeaderDelivery, a.ev.ID)
	req.Header.Set(HeaderTimestamp, ts)
	if len(secret) > 0 {
		req.Header.Set(HeaderSignature, Sign(secret, ts, a.body))
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return Delivery{Error: requestError(err, a.hook.Timeout)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseRead))
	resp.Body.Close()
	d := Delivery{StatusCode: resp.StatusCode}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		d.Outcome = OutcomeDelivered
	} else {
		d.Error = "receiver answered " + resp.Status
	}
	return d
}

// requestError is the text of a failed request without the URL that
// net/http's *url.Error quotes.
func requestError(err error, timeout time.Duration) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// retryable reports whether an attempt answered status (0: none came) may
// succeed if tried again: no answer, 408, 429 and 5xx. Other 4xx say the
// receiver refuses the request itself.
func retryable(status int) bool {
	return status == 0 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// backoff returns the delay after failed attempt k (from 1): base doubled
// k-1 times, at most max, with "equal jitter" (half fixed, half random, as
// AWS's architecture blog names it) so that many senders do not retry in
// step and none retries at once.
func backoff(base, max time.Duration, k int) time.Duration {
	d := base
	for i := 1; i < k && d < max; i++ {
		d *= 2
	}
	d = min(d, max)
	half := d / 2
	return half + randDuration(d-half)
}

// randDuration returns a random duration in [0, d].
func randDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(mrand.Int64N(int64(d) + 1))
}
