package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
	"github.com/snapstore/snapstore/internal/boundedread"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// postgresConnector is the "postgres" connection type, for PostgreSQL 12
// and later through github.com/jackc/pgx/v5 and its pgxpool. Options are
// listed in docs/connections.md. The connection is configured field by
// field (host, port, sslmode and sslrootcert through pgconn's parser with
// quoted values, the rest set on the parsed config), never by
// concatenating the user's text, and every session gets the runtime
// parameters the values depend on (postgresSession), so values arrive as
// the server's exact text.
type postgresConnector struct{}

var postgresOptionDefs = []source.OptionDef{
	{Key: "host", Type: source.OptString, Endpoint: true, Doc: "server host name or address, or a Unix socket directory (a path starting with /) (default 127.0.0.1)"},
	{Key: "port", Type: source.OptInt, Endpoint: true, Min: 1, Max: 65535, Doc: "TCP port, or the socket's port number (default 5432)"},
	{Key: "user", Type: source.OptString, Endpoint: true, Doc: "user (role) name"},
	{Key: "password", Type: source.OptSecret, Doc: "password: literal, env:NAME or file:/path"},
	{Key: "database", Type: source.OptString, Endpoint: true, Doc: "database (default: the user name, as PostgreSQL does)"},
	{Key: "sslmode", Type: source.OptString, Endpoint: true, Allowed: []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}, Doc: "libpq's sslmode (default prefer)"},
	{Key: "sslrootcert", Type: source.OptString, File: true, Endpoint: true, Doc: "CA certificate file (PEM) that verify-ca and verify-full check the server against"},
	{Key: "application_name", Type: source.OptString, Doc: "application_name the server shows in pg_stat_activity (default snapstore)"},
	{Key: "statement_timeout", Type: source.OptDuration, Doc: "server-side bound on each query of a pull, a chunk query included (default: the server's; 0s for none)"},
	{Key: "connect_timeout", Type: source.OptDuration, Doc: "bound of opening one connection, dial, handshake and login, and of a connection test (default 10s)"},
	{Key: "read_timeout", Type: source.OptDuration, Doc: "bound of each read of the connection while a query waits for the server (default 5m; 0s for none): how long a run waits on a frozen source"},
	{Key: "chunk_rows", Type: source.OptInt, Min: 1, Max: 10_000_000, Doc: "rows per keyset-pagination chunk of a pull (default 5000)"},
}

// Options implements Connector.
func (postgresConnector) Options() []source.OptionDef { return postgresOptionDefs }

// Validate implements Connector.
func (postgresConnector) Validate(o source.OptionValues) error {
	var errs []error
	if !o.Has("user") {
		errs = append(errs, &source.OptionError{Key: "user", Msg: "required"})
	}
	if o.Has("sslrootcert") && (o.String("sslmode") == "disable") {
		errs = append(errs, &source.OptionError{Key: "sslrootcert", Msg: "not allowed with sslmode disable"})
	}
	for _, k := range []string{"statement_timeout", "read_timeout"} {
		if o.Has(k) && o.Duration(k, 0) < 0 {
			errs = append(errs, &source.OptionError{Key: k, Msg: "must not be negative"})
		}
	}
	return errors.Join(errs...)
}

// postgresSession are the runtime parameters of every session, sent in
// the startup packet (which overrides ALTER ROLE and ALTER DATABASE
// settings) and set again inside each read transaction: the forms of
// docs/types.md depend on them.
var postgresSession = [][2]string{
	{"TimeZone", "UTC"},           // timestamptz as UTC text
	{"DateStyle", "ISO, YMD"},     // YYYY-MM-DD hh:mm:ss
	{"IntervalStyle", "iso_8601"}, // P1Y2M3DT4H5M6S
	{"extra_float_digits", "1"},   // shortest text that reads back exactly
	{"bytea_output", "hex"},       // \x0102
	{"client_encoding", "UTF8"},   // text is UTF-8
	{"standard_conforming_strings", "on"},
}

// pgConnString quotes one keyword/value connection string value.
func pgConnString(k, v string) string {
	return k + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// postgresConfig builds the pool configuration from resolved options.
func postgresConfig(o source.OptionValues, pool source.PoolOptions) (*pgxpool.Config, error) {
	host := o.String("host")
	if host == "" {
		host = "127.0.0.1"
	}
	sslmode := o.String("sslmode")
	if sslmode == "" {
		sslmode = "prefer"
	}
	parts := []string{
		pgConnString("host", host),
		pgConnString("port", strconv.FormatInt(o.Int("port", 5432), 10)),
		pgConnString("sslmode", sslmode),
	}
	if o.Has("sslrootcert") {
		// pgconn reads the file whole when it parses the settings: a
		// path naming a huge file or a device is refused first, as
		// snapstore's own PEM files are.
		if _, err := boundedread.PEMFile(o.String("sslrootcert")); errors.Is(err, boundedread.ErrTooLarge) {
			return nil, &source.OptionError{Key: "sslrootcert", Msg: "cannot be used: " + err.Error()}
		}
		parts = append(parts, pgConnString("sslrootcert", o.String("sslrootcert")))
	}
	cfg, err := pgxpool.ParseConfig(strings.Join(parts, " "))
	if err != nil {
		// pgconn's message may quote the string; keep it to the cause.
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && o.Has("sslrootcert") {
			return nil, &source.OptionError{Key: "sslrootcert", Msg: "cannot be used: " + errors.Unwrap(pe).Error()}
		}
		return nil, &source.OptionError{Key: "host", Msg: "not a valid PostgreSQL connection setting"}
	}
	cc := cfg.ConnConfig
	cc.User = o.String("user")
	cc.Password = o.Secret("password").Reveal()
	cc.Database = o.String("database")
	if cc.Database == "" {
		cc.Database = cc.User
	}
	cc.ConnectTimeout = o.Duration("connect_timeout", source.DefaultConnectTimeout)
	if rt := o.Duration("read_timeout", defaultReadTimeout); rt > 0 {
		dial := cc.DialFunc
		cc.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dial(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &readDeadlineConn{Conn: c, timeout: rt}, nil
		}
	}
	app := o.String("application_name")
	if app == "" {
		app = "snapstore"
	}
	// A fresh map: nothing from PGOPTIONS, PGTZ or PGAPPNAME.
	cc.RuntimeParams = map[string]string{"application_name": app,
		// A run is idle in its transaction while it writes a batch; the
		// server must not end it for that.
		"idle_in_transaction_session_timeout": "0",
	}
	if o.Has("statement_timeout") {
		cc.RuntimeParams["statement_timeout"] = strconv.FormatInt(o.Duration("statement_timeout", 0).Milliseconds(), 10)
	}
	for _, p := range postgresSession {
		cc.RuntimeParams[strings.ToLower(p[0])] = p[1]
	}
	if pool.Pooled {
		if pool.MaxIdle > 0 {
			return nil, &source.OptionError{Key: "max_idle", Msg: "not supported by postgres: pgxpool keeps up to max_open connections; use conn_max_idle_time"}
		}
		if pool.MaxOpen > 0 {
			cfg.MaxConns = int32(pool.MaxOpen)
		}
		if pool.ConnMaxLifetime > 0 {
			cfg.MaxConnLifetime = pool.ConnMaxLifetime
		}
		if pool.ConnMaxIdleTime > 0 {
			cfg.MaxConnIdleTime = pool.ConnMaxIdleTime
		}
	}
	return cfg, nil
}

// defaultReadTimeout is read_timeout's default, as the mysql type's: a
// chunk query's first rows, a checksum of a key range or the point's lock
// come well within it.
const defaultReadTimeout = 5 * time.Minute

// readDeadlineConn bounds each Read by timeout (read_timeout): pgx sets no
// deadline of its own but to interrupt a read for a cancelled context, and
// the kernel of a stopped server keeps answering TCP keepalives, so a
// frozen source would hold a run forever. A deadline pgx sets (a cancel's,
// in the past) is kept when it comes sooner; mu orders the two, so that a
// read never overwrites a cancel's deadline set meanwhile.
type readDeadlineConn struct {
	net.Conn
	timeout time.Duration
	mu      sync.Mutex
	set     time.Time // the read deadline pgx set; zero for none
}

func (c *readDeadlineConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	d := time.Now().Add(c.timeout)
	if !c.set.IsZero() && c.set.Before(d) {
		d = c.set
	}
	err := c.Conn.SetReadDeadline(d)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.Conn.Read(b)
}

func (c *readDeadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = t
	return c.Conn.SetDeadline(t)
}

func (c *readDeadlineConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = t
	return c.Conn.SetReadDeadline(t)
}

// Open implements Connector: a pgxpool, lazy (nothing is dialled until a
// connection is acquired), for every sharing mode; a single-use
// connection's pool lives for one run.
func (postgresConnector) Open(ctx context.Context, sc source.SourceConfig) (source.Source, error) {
	cfg, err := postgresConfig(sc.Options, sc.Pool)
	if err != nil {
		return nil, err
	}
	secrets := []string{cfg.ConnConfig.Password}
	pool, err := pgxpool.NewWithConfig(context.WithoutCancel(ctx), cfg)
	if err != nil {
		return nil, source.ScrubError(fmt.Errorf("opening data connection %q: %w", sc.Name, err), secrets...)
	}
	addr := cfg.ConnConfig.Host
	if !strings.HasPrefix(addr, "/") {
		addr = net.JoinHostPort(addr, strconv.Itoa(int(cfg.ConnConfig.Port)))
	}
	return &postgresSource{
		name:      sc.Name,
		addr:      source.SourceAddr{Connection: sc.Name, Type: "postgres", Addr: addr, ConnectTimeout: cfg.ConnConfig.ConnectTimeout, ServerMessage: serverMessage},
		pool:      pool,
		chunkRows: int(sc.Options.Int("chunk_rows", source.DefaultChunkRows)),
		timeout:   cfg.ConnConfig.ConnectTimeout,
		readTO:    sc.Options.Duration("read_timeout", defaultReadTimeout),
		secrets:   secrets,
		log:       sc.Logger,
	}, nil
}

// postgresSource is an open postgres data connection: one pgxpool.
type postgresSource struct {
	name      string
	addr      source.SourceAddr
	pool      *pgxpool.Pool
	chunkRows int
	timeout   time.Duration
	readTO    time.Duration // read_timeout; 0 for none
	secrets   []string
	log       *slog.Logger
}

// Close implements Source: pgxpool's Close waits for acquired connections
// to be released (the service closes a Source only when no run holds it).
func (s *postgresSource) Close() error { s.pool.Close(); return nil }

// CloseIdle implements IdleCloser: idle connections close now, busy ones
// when released.
func (s *postgresSource) CloseIdle() { s.pool.Reset() }

// scrub hides this connection's secrets in err.
func (s *postgresSource) scrub(err error) error { return source.ScrubError(err, s.secrets...) }

// acquire takes one connection of the pool, opening it when none is idle;
// a failure is a *SourceError naming the server and the cause.
func (s *postgresSource) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, source.NewSourceError(ctx, s.addr, classifyPostgres(ctx, err), s.scrub(err))
	}
	return c, nil
}

// Test implements Tester: connect, the server version, SELECT 1, under
// connect_timeout.
func (s *postgresSource) Test(ctx context.Context) source.TestResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res := source.TestResult{}
	fail := func(err error) source.TestResult {
		res.Cause = classifyPostgres(ctx, err)
		res.Message = s.scrub(err).Error()
		res.Latency = time.Since(start)
		return res
	}
	conn, err := s.acquire(ctx)
	if err != nil {
		return source.FailedTest(source.WithBound(err, s.timeout, "connect_timeout"), time.Since(start))
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, "SELECT 'PostgreSQL ' || current_setting('server_version')").Scan(&res.ServerVersion); err != nil {
		return fail(err)
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil {
		return fail(err)
	}
	res.OK = one == 1
	res.Latency = time.Since(start)
	return res
}

// classifyPostgres maps a pgx error to a TestResult cause: "auth",
// "unknown_database", "unreachable", "timeout", "config" or "error", from
// the SQLSTATE when the server answered.
func classifyPostgres(ctx context.Context, err error) string {
	var pe *pgconn.PgError
	var oe *source.OptionError
	var ne net.Error
	switch {
	case errors.As(err, &oe):
		return "config"
	case errors.As(err, &pe):
		switch {
		case pe.Code == "28P01", pe.Code == "28000", noConnectPrivilege(pe):
			return "auth" // invalid_password, invalid_authorization_specification, no CONNECT privilege
		case pe.Code == "3D000":
			return "unknown_database" // invalid_catalog_name
		case pe.Code == "57014":
			return "timeout" // query_canceled: statement_timeout
		case strings.HasPrefix(pe.Code, "08"), pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03":
			return "unreachable" // connection_exception, admin or crash shutdown, cannot_connect_now
		}
		return "error"
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout(), pgconn.Timeout(err):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "unreachable"
	}
	if strings.Contains(err.Error(), "tls error") {
		return "config" // sslmode or sslrootcert do not fit the server
	}
	var de *net.DNSError
	var op *net.OpError
	var ce *pgconn.ConnectError
	if errors.As(err, &de) || errors.As(err, &op) || errors.As(err, &ce) || pgconnClosed(err) {
		return "unreachable"
	}
	return "error"
}

// pgconnClosed reports an error of a connection the server or the network
// ended (pgconn's "conn closed", an unexpected EOF).
func pgconnClosed(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") || strings.HasSuffix(msg, ": EOF")
}

// noConnectPrivilege reports whether pe refuses the user CONNECT on the
// database (42501 at the connection): PostgreSQL names the privilege in the
// error's detail ("User does not have CONNECT privilege."), its message
// being "permission denied for database ...".
func noConnectPrivilege(pe *pgconn.PgError) bool {
	return pe.Code == "42501" && (strings.Contains(pe.Detail, "CONNECT") || strings.Contains(pe.Message, "CONNECT"))
}

// wrapPostgresErr marks a pgx error with ErrSourceAuth or
// ErrSourceUnavailable when it is one, keeping the error in the chain.
func wrapPostgresErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "42501" && !noConnectPrivilege(pe) {
		// insufficient_privilege on a table, column or schema: a grant.
		return fmt.Errorf("%w: %w", source.ErrSourcePermission, err)
	}
	switch classifyPostgres(ctx, err) {
	case "auth":
		return fmt.Errorf("%w: %w", source.ErrSourceAuth, err)
	case "unreachable", "unknown_database":
		return fmt.Errorf("%w: %w", source.ErrSourceUnavailable, err)
	}
	return err
}

// postgresRelkinds are the relations a connection lists and reads:
// tables, partitioned tables, views, materialized views, foreign tables.
const postgresRelkinds = `('r', 'p', 'v', 'm', 'f')`

// postgresTableType is a Resource type of a pg_class relkind.
func postgresTableType(relkind string) string {
	if relkind == "v" || relkind == "m" {
		return "view"
	}
	return "table"
}

// DefaultSchema implements source.DefaultSchemaer: the user's
// current_schema() ("" when its search_path names no existing schema),
// where describe looks up a table named without a schema.
func (s *postgresSource) DefaultSchema(ctx context.Context) (string, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Release()
	var def string
	if err := conn.QueryRow(ctx, "SELECT COALESCE(current_schema(), '')").Scan(&def); err != nil {
		return "", s.scrub(fmt.Errorf("reading the current schema of data connection %q: %w", s.name, wrapPostgresErr(ctx, err)))
	}
	return def, nil
}

// Resources implements ResourceLister: the tables and views of the
// database in the schemas the user may use and that it may read (a
// partitioned table once, not its partitions), with their estimated rows
// and their key (the primary key, else the unique key over NOT NULL
// columns a run would choose; none for views).
func (s *postgresSource) Resources(ctx context.Context) ([]source.Resource, error) {
	conn, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Release()
	rows, err := conn.Query(ctx, `SELECT c.oid, n.nspname, c.relname, c.relkind::text, `+postgresEstimate+`
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN `+postgresRelkinds+` AND NOT c.relispartition
		  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%'
		  AND has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
		ORDER BY n.nspname, c.relname`)
	if err != nil {
		return nil, s.scrub(fmt.Errorf("listing tables of data connection %q: %w", s.name, wrapPostgresErr(ctx, err)))
	}
	var out []source.Resource
	var oids []uint32
	for rows.Next() {
		var r source.Resource
		var oid uint32
		var kind string
		if err := rows.Scan(&oid, &r.Schema, &r.Name, &kind, &r.EstimatedRows); err != nil {
			rows.Close()
			return nil, fmt.Errorf("listing tables of data connection %q: %w", s.name, err)
		}
		r.Type = postgresTableType(kind)
		out = append(out, r)
		oids = append(oids, oid)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, s.scrub(fmt.Errorf("listing tables of data connection %q: %w", s.name, wrapPostgresErr(ctx, err)))
	}
	for i, oid := range oids {
		keys, err := postgresUniqueKeys(ctx, conn, oid)
		if err != nil {
			return nil, s.scrub(fmt.Errorf("listing the keys of %s.%s: %w", out[i].Schema, out[i].Name, wrapPostgresErr(ctx, err)))
		}
		for _, k := range keys {
			if k.usableKey {
				out[i].Key = k.cols
				break
			}
		}
	}
	return out, nil
}

// postgresEstimate is the SQL of a relation c's estimated rows:
// reltuples, summed over the leaf partitions of a partitioned table, or
// UnknownRows when PostgreSQL has none: reltuples -1 (never analyzed,
// PostgreSQL 14 on), or 0 for a relation never analyzed nor vacuumed (so
// before 14, and views), which says nothing of its rows.
const postgresEstimate = `CASE WHEN c.relkind = 'p' THEN
		(SELECT CASE WHEN bool_and(` + postgresNoEstimate + `) THEN -1 ELSE COALESCE(sum(GREATEST(l.reltuples, 0)), 0)::bigint END
			FROM pg_partition_tree(c.oid) pt JOIN pg_class l ON l.oid = pt.relid WHERE pt.isleaf)
		ELSE CASE WHEN ` + postgresNoEstimateC + ` THEN -1 ELSE c.reltuples::bigint END END`

// postgresNoEstimate is true for a relation l whose reltuples estimate
// nothing (postgresEstimate); postgresNoEstimateC the same of c.
const (
	postgresNoEstimate = `(l.reltuples < 0 OR l.reltuples = 0 AND COALESCE(pg_stat_get_last_analyze_time(l.oid), pg_stat_get_last_autoanalyze_time(l.oid),
		pg_stat_get_last_vacuum_time(l.oid), pg_stat_get_last_autovacuum_time(l.oid)) IS NULL)`
	postgresNoEstimateC = `(c.reltuples < 0 OR c.reltuples = 0 AND COALESCE(pg_stat_get_last_analyze_time(c.oid), pg_stat_get_last_autoanalyze_time(c.oid),
		pg_stat_get_last_vacuum_time(c.oid), pg_stat_get_last_autovacuum_time(c.oid)) IS NULL)`
)

// quotePostgresIdent quotes a PostgreSQL identifier with double quotes,
// doubling any inside, so reserved words, mixed case and dots are safe.
func quotePostgresIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// serverMessage returns the message of a PostgreSQL server's error in
// err's chain, as pgx renders it (source.SourceAddr.ServerMessage).
func serverMessage(err error) (string, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Error(), true
	}
	return "", false
}

func init() { source.Register("postgres", postgresConnector{}) }
