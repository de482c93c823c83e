package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/snapstore/snapstore/server"
)

// bodyReadTimeout bounds how long a client may take to send a request body
// (30s; a variable only so the test can shorten it).
var bodyReadTimeout = 30 * time.Second

// withBodyDeadline reads a request's body (bounded by server.MaxBodyBytes)
// under a read deadline of bodyReadTimeout before the handler runs, then
// lifts the deadline. http.Server.ReadTimeout would do the first half, but
// it also stays armed while the handler streams a long NDJSON or CSV
// response and would cancel it; this bounds only the body. Without it, a
// client that announces more bytes than it sends holds a goroutine forever
// (a slowloris). A body that does not arrive in time gets 408 with a
// problem body; one that is too large is left for the server's own limit to
// refuse.
func withBodyDeadline(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
		body, err := io.ReadAll(io.LimitReader(r.Body, server.MaxBodyBytes+1))
		_ = rc.SetReadDeadline(time.Time{})
		if err != nil {
			var ne interface{ Timeout() bool }
			status, code, title := http.StatusBadRequest, "bad_request", "the request body could not be read"
			if errors.As(err, &ne) && ne.Timeout() {
				status, code, title = http.StatusRequestTimeout, "body_timeout", "the request body did not arrive in time"
			}
			b, _ := json.Marshal(map[string]any{"type": "about:blank", "title": title, "status": status, "code": code})
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Connection", "close")
			w.WriteHeader(status)
			w.Write(append(b, '\n'))
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
