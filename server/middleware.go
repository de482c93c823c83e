package server

import (
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/labstack/echo/v4"
)

// middleware runs around every request, in order: the latency histogram
// and debug log (observe), with status 499 for an answer its client cut
// (answerCut), panic recovery, the refusal of what a browser
// sends on another site's behalf (browser.go), the body limit,
// authorisation and the token's grant (grants.go), the body's media type
// and request validation.
func (s *Server) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		rt := s.route(c)
		defer func() {
			// A stream cut by the server's own error after its status line
			// (streamAbort) leaves by this panic, which net/http turns into
			// a cut connection: it is counted and audited first, as the
			// 500 it is (or a 499 when its client had gone already).
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					c.Response().Status = http.StatusInternalServerError
					if answerCut(c) {
						c.Response().Status = statusClientClosed
					}
					s.observe(c, rt, time.Since(start))
					s.audit(c, rt)
				}
				panic(r)
			}
		}()
		if err := s.guard(c, rt, next); err != nil {
			c.Error(err)
		}
		if answerCut(c) {
			// Begun as a 200 (or any status), but not received whole:
			// logs, metrics and the audit trail tell it from one served.
			c.Response().Status = statusClientClosed
		}
		s.observe(c, rt, time.Since(start))
		s.audit(c, rt)
		return nil
	}
}

// guard recovers panics of the checks and the handler, then refuses
// cross-site requests, limits the body, authorises (role, then grant:
// what lies outside the grant answers as missing whatever the request's
// other parameters), checks the body's media type and validates before
// calling next.
func (s *Server) guard(c echo.Context, rt *route, next echo.HandlerFunc) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panicked", "method", c.Request().Method, "route", c.Path(), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("server: handler panicked: %v", r)
		}
	}()
	if err := s.CheckBrowser(c.Request()); err != nil {
		return err
	}
	if err := limitBody(c); err != nil {
		return err
	}
	if rt != nil { // else route not found or method not allowed: answered by echo
		if err := s.authorize(c, rt); err != nil {
			return err
		}
		if err := s.checkGrant(c, rt); err != nil {
			return err
		}
		if err := checkContentType(c.Request()); err != nil {
			return err
		}
		if raw := c.Request().URL.RawQuery; raw != "" {
			if err := checkQuery(raw, rt.query); err != nil {
				return err
			}
		}
		if !s.skipValidation {
			if err := s.validateRequest(c, rt); err != nil {
				if !wholeBodyOps[rt.op.OperationID] || violationsOf(err) == nil {
					return err
				}
				// A body checked whole: the handler adds its own
				// problems to the schema's and refuses (body.go).
				c.Set(ctxBodyProblem, err)
			}
		}
	}
	return next(c)
}
