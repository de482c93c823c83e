package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// DefaultBodyReadTimeout is how long serve lets a client take to send a
// request body.
const DefaultBodyReadTimeout = 30 * time.Second

// WithBodyDeadline reads a request's body (bounded by MaxBodyBytes) under a
// read deadline of timeout before the handler h runs, then
// lifts the deadline. http.Server.ReadTimeout would do the first half, but
// it also stays armed while the handler streams a long NDJSON or CSV
// response and would cancel it; this bounds only the body. Without it, a
// client that announces more bytes than it sends holds a goroutine forever
// (a slowloris). A body that does not arrive in time gets 408 with a
// problem body; one that is too large is left for the server's own limit to
// refuse.
func WithBodyDeadline(h http.Handler, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
		_ = rc.SetReadDeadline(time.Time{})
		if err != nil {
			var ne interface{ Timeout() bool }
			p := NewProblem(http.StatusBadRequest, "bad_request", "the request body could not be read")
			if errors.As(err, &ne) && ne.Timeout() {
				p = NewProblem(http.StatusRequestTimeout, "body_timeout", "the request body did not arrive in time")
			}
			b, _ := json.Marshal(p)
			w.Header().Set("Content-Type", ProblemContentType)
			w.Header().Set("Connection", "close")
			w.WriteHeader(p.Status)
			w.Write(append(b, '\n'))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
