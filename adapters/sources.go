package adapters

import "github.com/snapstore/snapstore/adapters/source"

// The source contract (package source) under the names the Service and its
// callers use.
type (
	Connector      = source.Connector
	SourceConfig   = source.SourceConfig
	Source         = source.Source
	Tester         = source.Tester
	ResourceLister = source.ResourceLister
	IdleCloser     = source.IdleCloser
	SnapshotSharer = source.SnapshotSharer
	ReadOptioner   = source.ReadOptioner
	TableRequest   = source.TableRequest
	TableReader    = source.TableReader
	Resource       = source.Resource
	TestResult     = source.TestResult
	SourceError    = source.SourceError
	OptionError    = source.OptionError
	OptionType     = source.OptionType
	OptionDef      = source.OptionDef
	OptionValues   = source.OptionValues
	Secret         = source.Secret
	PoolOptions    = source.PoolOptions

	checksummer = source.Checksummer
)

// Option types (source.OptionType).
const (
	OptString     = source.OptString
	OptInt        = source.OptInt
	OptBool       = source.OptBool
	OptDuration   = source.OptDuration
	OptSecret     = source.OptSecret
	OptStringMap  = source.OptStringMap
	OptStringList = source.OptStringList
)

// UnknownRows is Resource.EstimatedRows when the source has no estimate.
const UnknownRows = source.UnknownRows

// Errors of a source (package source).
var (
	ErrNoKey             = source.ErrNoKey
	ErrResourceNotFound  = source.ErrResourceNotFound
	ErrBadSelection      = source.ErrBadSelection
	ErrSourceUnavailable = source.ErrSourceUnavailable
	ErrSourceAuth        = source.ErrSourceAuth
	ErrSourcePermission  = source.ErrSourcePermission
	ErrUnsupportedType   = source.ErrUnsupportedType
	ErrTableChanged      = source.ErrTableChanged
	ErrBadOption         = source.ErrBadOption
)

// The secret helpers of package source that secret.go builds on.
const (
	redacted         = source.Redacted
	secretEnvPrefix  = source.SecretEnvPrefix
	secretFilePrefix = source.SecretFilePrefix
)

func newSecret(s string) Secret { return source.NewSecret(s) }

func isSecretRef(s string) bool { return source.IsSecretRef(s) }

func scrubError(err error, secrets ...string) error { return source.ScrubError(err, secrets...) }
