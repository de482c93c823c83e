package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/snapshot"
	"github.com/snapstore/snapstore/store"
)

// ProblemContentType is the media type of every error body (RFC 9457).
const ProblemContentType = "application/problem+json"

// Problem is an RFC 9457 problem details object. Code is snapstore's stable,
// machine-readable error code (for example "version_not_kept"); Field names
// the offending input ("version", "body.schedule", "options.port") when one
// input is to blame. Detail never carries a secret: errors of the packages
// below are written without them, and internal errors are reported as
// "internal error" with the cause only in the log.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`
	Code     string `json:"code"`
	Field    string `json:"field,omitempty"`
}

// problemTypeBase prefixes Problem.Type; the fragment is the code, documented
// in docs/api.md.
const problemTypeBase = "https://snapstore.dev/problems/"

// fieldError is a bad request input, named by field.
type fieldError struct {
	field string
	msg   string
	err   error // optional cause, wrapped
}

func (e *fieldError) Error() string {
	if e.field == "" {
		return e.msg
	}
	return e.field + ": " + e.msg
}

func (e *fieldError) Unwrap() error { return e.err }

// jsonError is a request body that is not JSON, or not JSON of the right
// top-level type: 400 bad_json, field "body".
type jsonError struct{ msg string }

func (e *jsonError) Error() string { return "body: " + e.msg }

func badJSON(format string, args ...any) error {
	return &jsonError{msg: fmt.Sprintf(format, args...)}
}

// badField returns a 400 problem naming field.
func badField(field, format string, args ...any) error {
	return &fieldError{field: field, msg: fmt.Sprintf(format, args...)}
}

// sentinel is one row of the error table.
type sentinel struct {
	err    error
	status int
	code   string
}

// sentinels maps every exported sentinel of snapshot, adapters and store to a
// status and a stable code. Order matters only where one error wraps another
// (the first match wins). problem_test.go checks that every exported Err*
// variable of the three packages appears here.
var sentinels = []sentinel{
	// snapshot
	{snapshot.ErrDatasetNotFound, http.StatusNotFound, "dataset_not_found"},
	{snapshot.ErrNoVersion, http.StatusNotFound, "no_version"},
	{snapshot.ErrVersionNotKept, http.StatusGone, "version_not_kept"},
	{snapshot.ErrTagNotFound, http.StatusNotFound, "tag_not_found"},
	{snapshot.ErrRowNotFound, http.StatusNotFound, "row_not_found"},
	{snapshot.ErrRunInProgress, http.StatusConflict, "run_in_progress"},
	{snapshot.ErrGuardRefused, http.StatusConflict, "guard_refused"},
	{snapshot.ErrBadKey, http.StatusBadRequest, "bad_key"},
	{snapshot.ErrBadSchema, http.StatusUnprocessableEntity, "bad_schema"},
	{snapshot.ErrKeyChanged, http.StatusConflict, "key_changed"},
	{snapshot.ErrRunClosed, http.StatusConflict, "run_closed"},
	{snapshot.ErrRecordNotFound, http.StatusNotFound, "not_found"},
	{snapshot.ErrBadPageToken, http.StatusBadRequest, "bad_page_token"},
	{snapshot.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument"},
	{snapshot.ErrClosed, http.StatusServiceUnavailable, "closed"},
	{snapshot.ErrCorrupt, http.StatusInternalServerError, "corrupt"}, // stored data, not input: the one 500 sentinel
	// Several processes on one store (snapshot doc.go S1-S3): a read-only
	// process refuses writes (send them to the writer); a writer that lost
	// its lease refuses them until it renews (safe to retry).
	{snapshot.ErrReadOnly, http.StatusConflict, "read_only"},
	{snapshot.ErrWriterLeaseHeld, http.StatusServiceUnavailable, "writer_lease_held"},
	{snapshot.ErrWriterLeaseLost, http.StatusServiceUnavailable, "writer_lease_lost"},
	// adapters
	{adapters.ErrConnectionNotFound, http.StatusNotFound, "connection_not_found"},
	{adapters.ErrConnectionExists, http.StatusConflict, "connection_exists"},
	{adapters.ErrConnectionReadOnly, http.StatusConflict, "connection_read_only"},
	{adapters.ErrConnectionInUse, http.StatusConflict, "connection_in_use"},
	{adapters.ErrUnknownType, http.StatusBadRequest, "unknown_connection_type"},
	{adapters.ErrAdapterNotFound, http.StatusNotFound, "adapter_not_found"},
	{adapters.ErrAdapterExists, http.StatusConflict, "adapter_exists"},
	{adapters.ErrAdapterReadOnly, http.StatusConflict, "adapter_read_only"},
	{adapters.ErrRunNotFound, http.StatusNotFound, "run_not_found"},
	{adapters.ErrRunInProgress, http.StatusConflict, "run_in_progress"},
	{adapters.ErrBadSchedule, http.StatusBadRequest, "bad_schedule"},
	{adapters.ErrNoKey, http.StatusUnprocessableEntity, "no_key"},
	{adapters.ErrResourceNotFound, http.StatusNotFound, "resource_not_found"},
	{adapters.ErrSourceUnavailable, http.StatusBadGateway, "source_unavailable"},
	{adapters.ErrSourceAuth, http.StatusBadGateway, "source_auth"},
	{adapters.ErrUnsupportedType, http.StatusUnprocessableEntity, "unsupported_type"},
	{adapters.ErrShuttingDown, http.StatusServiceUnavailable, "shutting_down"},
	// One adapter per dataset: a conflict with the adapter that writes it
	// (field "dataset" from the *adapters.OptionError); before ErrBadOption,
	// which the OptionError also carries.
	{adapters.ErrDatasetTaken, http.StatusConflict, "dataset_taken"},
	{adapters.ErrBadOption, http.StatusBadRequest, "bad_option"},
	// store
	{store.ErrNotFound, http.StatusNotFound, "not_found"},
	{store.ErrClosed, http.StatusServiceUnavailable, "closed"},
	{store.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument"},
	{store.ErrUnavailable, http.StatusServiceUnavailable, "store_unavailable"},
	// standard library
	{context.DeadlineExceeded, http.StatusGatewayTimeout, "timeout"},
	{context.Canceled, http.StatusServiceUnavailable, "canceled"},
}

// sentinelFields names the input to blame for sentinels that always come
// from one field.
var sentinelFields = map[error]string{
	adapters.ErrBadSchedule:      "schedule",
	snapshot.ErrBadPageToken:     "page_token",
	adapters.ErrUnknownType:      "type",
	snapshot.ErrKeyChanged:       "key_columns",
	adapters.ErrNoKey:            "key_columns",
	adapters.ErrResourceNotFound: "resource",
}

// ProblemFor is the one translation from an error to problem details: the
// sentinels of snapshot, adapters and store (checked with errors.Is), an
// *adapters.OptionError (Field is its Key), bad request inputs of this
// package, echo's HTTP errors (404 route, 405 method, 413 body) and
// everything else, which is a 500 "internal" whose detail hides the cause.
func ProblemFor(err error) Problem {
	var je *jsonError
	if errors.As(err, &je) {
		p := newProblem(http.StatusBadRequest, "bad_json", je.Error())
		p.Field = "body"
		return p
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		p := newProblem(http.StatusBadRequest, "bad_request", fe.Error())
		p.Field = fe.field
		return p
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code := "http_error"
		switch he.Code {
		case http.StatusNotFound:
			code = "route_not_found"
		case http.StatusMethodNotAllowed:
			code = "method_not_allowed"
		case http.StatusRequestEntityTooLarge:
			code = "body_too_large"
		case http.StatusUnauthorized:
			code = "unauthorized"
		case http.StatusForbidden:
			code = "forbidden"
		case http.StatusBadRequest:
			code = "bad_request"
		case http.StatusUnsupportedMediaType:
			code = "unsupported_media_type"
		}
		return newProblem(he.Code, code, fmt.Sprint(he.Message))
	}
	// The most specific sentinel wins (adapters.ErrBadOption comes after the
	// others in the table); the field comes from an *adapters.OptionError in
	// the chain, a field attached by this package, or the sentinel's usual
	// field.
	var oe *adapters.OptionError
	hasOption := errors.As(err, &oe)
	for _, s := range sentinels {
		if !errors.Is(err, s.err) {
			continue
		}
		p := newProblem(s.status, s.code, err.Error())
		p.Field = sentinelFields[s.err]
		var fs *fieldedSentinel
		switch {
		case errors.As(err, &fs):
			p.Field = fs.field
		case hasOption:
			p.Field = oe.Key
		}
		return p
	}
	if hasOption { // an OptionError built without Unwrap (defensive)
		p := newProblem(http.StatusBadRequest, "bad_option", err.Error())
		p.Field = oe.Key
		return p
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return newProblem(http.StatusBadRequest, "bad_json", fmt.Sprintf("body is not valid JSON at offset %d", se.Offset))
	case errors.As(err, &te):
		p := newProblem(http.StatusBadRequest, "bad_json", fmt.Sprintf("body field %q: want %s, got %s", te.Field, te.Type, te.Value))
		p.Field = "body." + te.Field
		return p
	}
	return newProblem(http.StatusInternalServerError, "internal", "internal error; see the server log")
}

func newProblem(status int, code, detail string) Problem {
	return Problem{
		Type:   problemTypeBase + code,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
	}
}

// withField names field in a bad-input error of a lower package, keeping
// the sentinel for the code.
func withField(err error, field string) error {
	for _, s := range []error{snapshot.ErrBadKey, snapshot.ErrInvalidArgument} {
		if errors.Is(err, s) {
			return &fieldedSentinel{err: err, field: field}
		}
	}
	return err
}

// fieldedSentinel is a sentinel error of a lower package blamed on a field.
type fieldedSentinel struct {
	err   error
	field string
}

func (e *fieldedSentinel) Error() string { return e.err.Error() }

func (e *fieldedSentinel) Unwrap() error { return e.err }
