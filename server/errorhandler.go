package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
)

// handleError is echo's error handler: every error becomes a problem.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		// A stream already started: the status is sent; log and cut.
		level := slog.LevelWarn
		if clientGone(c, err) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			level = slog.LevelDebug // the client hung up mid-answer
		}
		s.log.Log(c.Request().Context(), level, "error after the response started", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
		return
	}
	if clientGone(c, err) {
		// Nobody is listening: nothing to answer, not a server error.
		c.Response().Status = statusClientClosed
		s.log.Debug("client went away", "method", c.Request().Method, "route", c.Path(), "status", statusClientClosed, "err", err)
		return
	}
	if errors.Is(err, context.Canceled) && s.stopping.Load() {
		// The server's own work was cancelled because it is stopping: safe
		// to retry elsewhere.
		err = fmt.Errorf("%w: %w", adapters.ErrShuttingDown, err)
	}
	err = s.explainNoDataset(c, err)
	p := ProblemFor(err)
	p.Instance = c.Request().URL.Path
	if p.Status >= 500 {
		s.log.Error("request failed", "method", c.Request().Method, "route", c.Path(), "status", p.Status, "code", p.Code, "err", err)
	}
	if p.Status == http.StatusUnauthorized {
		c.Response().Header().Set("WWW-Authenticate", `Bearer realm="snapstore"`)
	}
	c.Set(ctxProblemCode, p.Code)
	writeProblem(c, p)
}

// clientGone reports whether err comes from the request's connection going
// away: err is a cancellation and the request's context is canceled, which
// net/http does when the client closes the connection (a graceful shutdown
// leaves requests running; only a forced close cuts them, and then nothing
// can be answered either). Cancellations of the server's own contexts leave
// the request's alive and are answered as problems.
func clientGone(c echo.Context, err error) bool {
	return errors.Is(err, context.Canceled) && errors.Is(c.Request().Context().Err(), context.Canceled)
}

// statusClientClosed is the status that logs, metrics and the audit
// trail give a request whose client went away before the answer was
// whole (nginx's 499): before it began (clientGone), when nothing is
// sent, or in the middle (answerCut), when the status line sent said
// otherwise. It is never sent.
const statusClientClosed = 499

// answerCut reports whether the answer of c began (its status line is
// written) but its client closed the connection before the handler
// returned: a stream (NDJSON, CSV, Arrow, a Parquet file) cut short.
// net/http cancels the request's context when the connection is closed
// or a write to it fails, and not when the handler ends before it. A
// streamed answer's last bytes (its last chunk) stay in the server's
// buffers until the handler returns, so its client cannot have read it
// whole before then; an answer of known Content-Length (a Parquet file)
// all of whose bytes were written was sent whole, however fast its
// client hung up after. What the kernel took before the client went away
// counts as sent: a cut answer that fitted in the socket buffers stays a
// 200, as in nginx's logs.
func answerCut(c echo.Context) bool {
	res := c.Response()
	if !res.Committed || !errors.Is(c.Request().Context().Err(), context.Canceled) {
		return false
	}
	if n, err := strconv.ParseInt(res.Header().Get(echo.HeaderContentLength), 10, 64); err == nil &&
		c.Request().Method != http.MethodHead && res.Size >= n {
		return false
	}
	return true
}

// explainNoDataset turns the dataset_not_found of a read into no_version
// when an adapter writes that dataset but has not committed yet: the
// dataset will exist, and the detail says which adapter and when it runs.
func (s *Server) explainNoDataset(c echo.Context, err error) error {
	ds := c.Param("dataset")
	if ds == "" || documentedMethod(c.Request().Method) != http.MethodGet || !errors.Is(err, snapshot.ErrDatasetNotFound) {
		return err
	}
	if u, uerr := url.PathUnescape(ds); uerr == nil && c.Request().URL.RawPath != "" {
		ds = u
	}
	if !allowDataset(c, ds) {
		return err // outside the grant: as a dataset no adapter writes
	}
	for _, a := range s.svc.ListAdapters() {
		if a.Dataset != ds && !(a.Dataset == "" && a.Name == ds) { // Dataset defaults to Name
			continue
		}
		when := "when started (POST /v1/adapters/" + a.Name + "/runs)"
		if a.NextRun != nil {
			when = "at its next run, " + a.NextRun.UTC().Format(time.RFC3339)
		}
		return fmt.Errorf("%w: dataset %q has nothing committed yet; adapter %q writes it, %s", snapshot.ErrNoVersion, ds, a.Name, when)
	}
	return err
}

// writeProblem sends p as problem+json (headers only for HEAD).
func writeProblem(c echo.Context, p Problem) {
	c.Response().Header().Set(echo.HeaderContentType, ProblemContentType)
	if c.Request().Method == http.MethodHead {
		c.Response().WriteHeader(p.Status)
		return
	}
	_ = c.JSON(p.Status, p)
}
