package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
	"github.com/snapstore/snapstore/internal/errtext"
	"github.com/snapstore/snapstore/notify"
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
	// Messages holds, for an operation that went to several cluster nodes
	// (a gossip keyring change), the answer of each node that failed, by
	// node id.
	Messages map[string]string `json:"messages,omitempty"`
	// Errors lists every violation of an input checked whole (a body's
	// schema, a connection, adapter or token definition), in the order
	// the checks found them; Code, Field and Detail describe the first
	// of them whose code is the answer's. Absent when one problem
	// stopped the check.
	Errors []Violation `json:"errors,omitempty"`
}

// Violation is one problem of an input checked whole: its field, its
// code (a code of the table in docs/api.md) and what is wrong with it.
type Violation struct {
	Field  string `json:"field,omitempty"`
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// Blames reports whether p blames field, or a part of it (notify blames
// notify[0], retention blames retention.ttl): its Field or the field of
// one of its Errors.
func (p *Problem) Blames(field string) bool {
	in := func(f string) bool {
		return f == field || strings.HasPrefix(f, field+"[") || strings.HasPrefix(f, field+".")
	}
	if in(p.Field) {
		return true
	}
	for _, v := range p.Errors {
		if in(v.Field) {
			return true
		}
	}
	return false
}

// problemTypeBase prefixes Problem.Type; the fragment is the code, documented
// in docs/api.md.
const problemTypeBase = "https://snapstore.dev/problems/"

// Bad input: which field is to blame.
//
// A problem names the input to blame in Field. It comes from one of two
// places, and ProblemFor reads both: a *fieldError that the handler which
// parsed the input attached (WithField, BadField), or, for errors that
// always come from one input (a bad cron schedule, a page token), the
// field column of the sentinels table. An *adapters.OptionError carries its
// own key (options.port), which stands for an attached field. With none of
// these, Field is empty: no one input is to blame.

// fieldError blames one request input for err: the answer is err's problem
// (its sentinel's status and code) with Field set to field.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string { return e.err.Error() }

func (e *fieldError) Unwrap() error { return e.err }

// WithField blames field for err; "" blames nothing. Attach it only where
// the input is the cause (a tag_not_found of a diff bound, not a
// dataset_not_found of its path).
func WithField(err error, field string) error {
	if err == nil || field == "" {
		return err
	}
	return &fieldError{field: field, err: err}
}

// nodeMessages attaches to err the answer of each cluster node that
// failed it (Problem.Messages).
type nodeMessages struct {
	msgs map[string]string
	err  error
}

func (e *nodeMessages) Error() string { return e.err.Error() }

func (e *nodeMessages) Unwrap() error { return e.err }

// withMessages attaches msgs, node id to message, to err; none attaches
// nothing.
func withMessages(err error, msgs map[string]string) error {
	if err == nil || len(msgs) == 0 {
		return err
	}
	return &nodeMessages{msgs: msgs, err: err}
}

// Refusals of this package's own checks; each refusal error matches one.
var (
	errBadRequest = errors.New("server: bad request")
	errBadJSON    = errors.New("server: bad JSON")
)

// refusal is a request refused by this package: kind (errBadRequest,
// errBadJSON, errHostNotLoopback, errCrossOrigin) gives its code, msg its
// text.
type refusal struct {
	kind error
	msg  string
}

func (e *refusal) Error() string { return e.msg }

func (e *refusal) Is(target error) bool { return target == e.kind }

// BadField refuses the input field: 400 bad_request naming it ("" names
// none, for a request wrong as a whole).
func BadField(field, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	return WithField(&refusal{kind: errBadRequest, msg: msg}, field)
}

// badJSON refuses a body that is not JSON, or not JSON of the right
// top-level type: 400 bad_json naming "body".
func badJSON(format string, args ...any) error {
	return &refusal{kind: errBadJSON, msg: "body: " + fmt.Sprintf(format, args...)}
}

// sentinel is one row of the error table.
type sentinel struct {
	err    error
	status int
	code   string
	field  string // the input to blame when none is attached (fieldError)
}

// sentinels maps this package's own refusals and every exported sentinel
// of snapshot, adapters and store to a status, a stable code and, for an
// error that always comes from one input, the field to blame. Order matters
// only where one error wraps another (the first match wins).
// problem_test.go checks that every exported Err* variable of the three
// packages appears here.
var sentinels = []sentinel{
	// this package's own checks (BadField, badJSON)
	{errBadRequest, http.StatusBadRequest, "bad_request", ""},
	{errBadJSON, http.StatusBadRequest, "bad_json", "body"},
	{errBadFormat, http.StatusBadRequest, "bad_format", "format"},
	{errRangeNotSatisfiable, http.StatusRequestedRangeNotSatisfiable, "range_not_satisfiable", "Range"},
	{errPreconditionFailed, http.StatusPreconditionFailed, "precondition_failed", "If-Match"},
	{errFormatNotOffered, http.StatusNotAcceptable, "format_not_offered", "format"},
	{errHostNotLoopback, http.StatusMisdirectedRequest, "host_not_loopback", ""},
	{errCrossOrigin, http.StatusForbidden, "cross_origin", ""},
	{ErrNotClustered, http.StatusNotFound, "not_clustered", ""},
	// the cluster routes (cluster.go)
	{ErrNodeNotFound, http.StatusNotFound, "node_not_found", "id"},
	{ErrNodeAlive, http.StatusConflict, "node_alive", "id"},
	{ErrNodeNotAlive, http.StatusConflict, "node_not_alive", "id"},
	{ErrClusterCredential, http.StatusUnauthorized, "unauthorized", ""},
	{ErrNoGossipKeyCredential, http.StatusUnauthorized, "unauthorized", ""},
	{ErrGossipNotEncrypted, http.StatusConflict, "gossip_not_encrypted", ""},
	{ErrKeyring, http.StatusBadGateway, "keyring_failed", ""},
	// API tokens (apitokens.go): an unknown or revoked token is the 401
	// unauthorized of every bad token, so that the code does not tell
	// which; an expired one says so.
	{ErrTokenExpired, http.StatusUnauthorized, "token_expired", ""},
	{ErrTokenNotFound, http.StatusNotFound, "token_not_found", "name"},
	{ErrTokenExists, http.StatusConflict, "token_exists", "name"},
	{ErrAuthDisabled, http.StatusConflict, "auth_disabled", ""},
	// snapshot
	{snapshot.ErrDatasetNotFound, http.StatusNotFound, "dataset_not_found", ""},
	{snapshot.ErrNoVersion, http.StatusNotFound, "no_version", ""},
	{snapshot.ErrVersionNotKept, http.StatusGone, "version_not_kept", ""},
	{snapshot.ErrTagNotFound, http.StatusNotFound, "tag_not_found", ""},
	{snapshot.ErrRowNotFound, http.StatusNotFound, "row_not_found", ""},
	{snapshot.ErrTableRequired, http.StatusConflict, "table_required", "table"},
	{snapshot.ErrTableNotFound, http.StatusNotFound, "table_not_found", "table"},
	{snapshot.ErrTableMissing, http.StatusConflict, "table_missing", ""},
	{snapshot.ErrTableReplaced, http.StatusConflict, "table_replaced", "table"},
	{snapshot.ErrRunInProgress, http.StatusConflict, "run_in_progress", ""},
	{snapshot.ErrNotCurrent, http.StatusConflict, "not_current", ""},
	{snapshot.ErrGuardRefused, http.StatusConflict, "guard_refused", ""},
	{snapshot.ErrDuplicateKey, http.StatusUnprocessableEntity, "duplicate_key", "key_columns"},
	{snapshot.ErrBadKey, http.StatusBadRequest, "bad_key", ""},
	{snapshot.ErrBadSchema, http.StatusUnprocessableEntity, "bad_schema", ""},
	{snapshot.ErrKeyChanged, http.StatusConflict, "key_changed", "key_columns"},
	{snapshot.ErrPartitionCount, http.StatusConflict, "partition_count", ""},
	{snapshot.ErrPartitionKey, http.StatusConflict, "partition_key", "partition_key"},
	{snapshot.ErrRunClosed, http.StatusConflict, "run_closed", ""},
	{snapshot.ErrRecordNotFound, http.StatusNotFound, "not_found", ""},
	{snapshot.ErrBadPageToken, http.StatusBadRequest, "bad_page_token", "page_token"},
	{snapshot.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument", ""},
	{snapshot.ErrClosed, http.StatusServiceUnavailable, "closed", ""},
	{snapshot.ErrCorrupt, http.StatusInternalServerError, "corrupt", ""}, // stored data, not input: the one 500 sentinel
	// Several processes on one store: a read-only process refuses writes
	// (snapshot.W2: send them to a writer); an operation whose writer slot
	// another process took stopped (snapshot.W3: safe to retry); a write
	// whose outcome the store did not tell is learned later (snapshot.D9:
	// read to see what happened).
	{snapshot.ErrReadOnly, http.StatusConflict, "read_only", ""},
	{snapshot.ErrSlotLost, http.StatusConflict, "writer_slot_lost", ""},
	{snapshot.ErrOutcomeUnknown, http.StatusServiceUnavailable, "outcome_unknown", ""},
	// adapters
	{adapters.ErrConnectionNotFound, http.StatusNotFound, "connection_not_found", ""},
	{adapters.ErrConnectionExists, http.StatusConflict, "connection_exists", ""},
	{adapters.ErrConnectionReadOnly, http.StatusConflict, "connection_read_only", ""},
	{adapters.ErrConnectionInUse, http.StatusConflict, "connection_in_use", ""},
	{adapters.ErrUnknownType, http.StatusBadRequest, "unknown_connection_type", "type"},
	{adapters.ErrAdapterNotFound, http.StatusNotFound, "adapter_not_found", ""},
	{adapters.ErrAdapterExists, http.StatusConflict, "adapter_exists", ""},
	{adapters.ErrAdapterReadOnly, http.StatusConflict, "adapter_read_only", ""},
	{adapters.ErrRunNotFound, http.StatusNotFound, "run_not_found", ""},
	{adapters.ErrRunInProgress, http.StatusConflict, "run_in_progress", ""},
	{adapters.ErrBadSchedule, http.StatusBadRequest, "bad_schedule", "schedule"},
	{adapters.ErrNoKey, http.StatusUnprocessableEntity, "no_key", "key_columns"},
	{adapters.ErrResourceNotFound, http.StatusNotFound, "resource_not_found", "resource"},
	{adapters.ErrSourceUnavailable, http.StatusBadGateway, "source_unavailable", ""},
	{adapters.ErrSourcePermission, http.StatusBadGateway, "source_permission", ""},
	{adapters.ErrSourceAuth, http.StatusBadGateway, "source_auth", ""},
	{adapters.ErrUnsupportedType, http.StatusUnprocessableEntity, "unsupported_type", ""},
	{adapters.ErrTableChanged, http.StatusConflict, "table_changed", ""},
	{adapters.ErrShuttingDown, http.StatusServiceUnavailable, "shutting_down", ""},
	// Secrets at rest (adapters.E1-E5): no key to encrypt a literal with
	// (the server's secrets.key_file is not set); a stored secret that
	// the configured keys do not decrypt.
	{adapters.ErrSecretKeyMissing, http.StatusConflict, "secret_key_missing", ""},
	{adapters.ErrSecretKeyUnknown, http.StatusConflict, "secret_key_unknown", ""},
	{adapters.ErrSecretUnreadable, http.StatusConflict, "secret_unreadable", ""},
	// Where runs happen in a cluster (adapters.L2-L6): a strategy this
	// version cannot run; a node that takes no new run, or cannot be
	// reached (ask another node, or retry).
	{adapters.ErrStrategyNotSupported, http.StatusNotImplemented, "strategy_not_supported", ""},
	{adapters.ErrNodeDraining, http.StatusServiceUnavailable, "node_draining", ""},
	{adapters.ErrNodeUnreachable, http.StatusServiceUnavailable, "node_unreachable", ""},
	{adapters.ErrNodeFailed, http.StatusServiceUnavailable, "node_failed", ""},
	// One adapter per dataset: a conflict with the adapter that writes it
	// (field "dataset" from the *adapters.OptionError); before ErrBadOption,
	// which the OptionError also carries.
	{adapters.ErrDatasetTaken, http.StatusConflict, "dataset_taken", ""},
	{adapters.ErrBadOption, http.StatusBadRequest, "bad_option", ""},
	// A run's selection that no longer names its tables apart; the
	// same selection in a definition is an *adapters.OptionError, a
	// bad_option above.
	{adapters.ErrBadSelection, http.StatusConflict, "bad_selection", ""},
	// notify
	{notify.ErrWebhookNotFound, http.StatusNotFound, "webhook_not_found", ""},
	// store
	{store.ErrNotFound, http.StatusNotFound, "not_found", ""},
	{store.ErrClosed, http.StatusServiceUnavailable, "closed", ""},
	{store.ErrInvalidArgument, http.StatusBadRequest, "invalid_argument", ""},
	{store.ErrUnavailable, http.StatusServiceUnavailable, "store_unavailable", ""},
	// standard library
	{context.DeadlineExceeded, http.StatusGatewayTimeout, "timeout", ""},
	{context.Canceled, http.StatusServiceUnavailable, "canceled", ""},
}

// httpCodes gives the codes of echo's HTTP errors (and this package's, made
// with echo.NewHTTPError) by status; any other status is "http_error".
var httpCodes = map[int]string{
	http.StatusBadRequest:            "bad_request",
	http.StatusUnauthorized:          "unauthorized",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "route_not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestEntityTooLarge: "body_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
}

// Violations: every problem at once.
//
// A check that goes on after the first problem returns them joined
// (errors.Join), as the config file's check does; each joined error is
// one violation, answered as ProblemFor answers it alone. The answer's
// status and code stay those of the joined error as a whole (the first
// row of sentinels that any of them matches), so that a client sees the
// same code for one bad field as for several.

// joinType is the type of what errors.Join returns; only such an error
// is split into violations (an error that wraps two others with
// fmt.Errorf("%w: %w") is one problem, told two ways).
var joinType = reflect.TypeOf(errors.Join(errBadRequest))

// violationsOf returns the errors that err joins, depth first, or nil
// when err is not a join.
func violationsOf(err error) []error {
	if reflect.TypeOf(err) != joinType {
		return nil
	}
	var out []error
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		if sub := violationsOf(e); sub != nil {
			out = append(out, sub...)
		} else {
			out = append(out, e)
		}
	}
	return out
}

// ProblemFor is the one translation from an error to problem details:
// echo's HTTP errors (404 route, 405 method, 413 body, 401, 403, 415), then
// the first row of sentinels that the error matches (errors.Is), and
// everything else, which is a 500 "internal" whose detail hides the cause.
// Field is, in this order, the field a handler attached (fieldError), the
// key of an *adapters.OptionError, or the row's field.
func ProblemFor(err error) Problem {
	parts := violationsOf(err)
	if parts == nil {
		return problemOf(err)
	}
	p := problemOf(err)
	if p.Status >= 500 {
		return p // not bad input: nothing to list
	}
	p.Errors = make([]Violation, 0, len(parts))
	first := -1
	for i, e := range parts {
		q := problemOf(e)
		p.Errors = append(p.Errors, Violation{Field: q.Field, Code: q.Code, Detail: q.Detail})
		if first < 0 && q.Code == p.Code {
			first = i
		}
	}
	if first < 0 {
		first = 0
	}
	v := p.Errors[first]
	p.Field, p.Detail = v.Field, v.Detail
	if n := len(parts) - 1; n > 0 {
		more := "problems"
		if n == 1 {
			more = "problem"
		}
		p.Detail = fmt.Sprintf("%s (and %d more %s: errors lists all %d)", v.Detail, n, more, len(parts))
	}
	return p
}

// problemOf is ProblemFor of one problem.
func problemOf(err error) Problem {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code, ok := httpCodes[he.Code]
		if !ok {
			code = "http_error"
		}
		return NewProblem(he.Code, code, fmt.Sprint(he.Message))
	}
	for _, s := range sentinels {
		if !errors.Is(err, s.err) {
			continue
		}
		p := NewProblem(s.status, s.code, errtext.Text(err))
		var fe *fieldError
		var oe *adapters.OptionError
		switch {
		case errors.As(err, &fe):
			p.Field = fe.field
		case errors.As(err, &oe):
			p.Field = oe.Key
		default:
			p.Field = s.field
		}
		var nm *nodeMessages
		if errors.As(err, &nm) {
			p.Messages = nm.msgs
		}
		return p
	}
	return NewProblem(http.StatusInternalServerError, "internal", "internal error; see the server log")
}

// NewProblem builds the problem of status and code; Type is the code's
// URL.
func NewProblem(status int, code, detail string) Problem {
	return Problem{
		Type:   problemTypeBase + code,
		Title:  http.StatusText(status),
		Status: status,
		Detail: detail,
		Code:   code,
	}
}
