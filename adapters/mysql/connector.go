package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/snapstore/snapstore/adapters/source"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// mysqlConnector is the "mysql" connection type, for MySQL 5.7/8.x and
// MariaDB 10.x through github.com/go-sql-driver/mysql. Options are listed in
// docs/connections.md; the DSN is always built with mysql.Config (never by
// string concatenation), and the driver always runs with the text protocol
// (InterpolateParams) and parseTime off, so DECIMAL and temporal values
// arrive as the server's exact text.
type mysqlConnector struct{}

var mysqlOptionDefs = []source.OptionDef{
	{Key: "host", Type: source.OptString, Endpoint: true, Doc: "server host name or address (default 127.0.0.1)"},
	{Key: "port", Type: source.OptInt, Endpoint: true, Min: 1, Max: 65535, Doc: "TCP port (default 3306)"},
	{Key: "socket", Type: source.OptString, Endpoint: true, Doc: "Unix socket path, instead of host and port"},
	{Key: "user", Type: source.OptString, Endpoint: true, Doc: "user name"},
	{Key: "password", Type: source.OptSecret, Doc: "password: literal, env:NAME or file:/path"},
	{Key: "database", Type: source.OptString, Endpoint: true, Doc: "default database (schema) for resources without a schema"},
	{Key: "tls", Type: source.OptString, Endpoint: true, Allowed: []string{"false", "true", "skip-verify", "preferred"}, Doc: "TLS mode of the driver (default false)"},
	{Key: "params", Type: source.OptStringMap, Doc: "session system variables set at connect, name -> SQL value"},
	{Key: "dsn", Type: source.OptSecret, Doc: "a whole go-sql-driver DSN instead of host/port/socket/user/password/database; literal, env:NAME or file:/path"},
	{Key: "connect_timeout", Type: source.OptDuration, Doc: "bound of opening one connection, dial, handshake and login, and of a connection test (default 10s)"},
	{Key: "read_timeout", Type: source.OptDuration, Doc: "I/O read timeout per packet (default 5m; 0s for none): bounds how long a run waits on a frozen source"},
	{Key: "chunk_rows", Type: source.OptInt, Min: 1, Max: 10_000_000, Doc: "rows per keyset-pagination chunk of a pull (default 5000)"},
}

// Options implements Connector.
func (mysqlConnector) Options() []source.OptionDef { return mysqlOptionDefs }

// mysqlManagedParams are driver settings snapstore owns; params may not
// change them.
var mysqlManagedParams = map[string]bool{
	"parsetime": true, "interpolateparams": true, "loc": true, "time_zone": true,
	"multistatements": true, "allowallfiles": true, "columnswithalias": true,
	"charset": true, "collation": true,
}

var sysVarName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate implements Connector.
func (mysqlConnector) Validate(o source.OptionValues) error {
	var errs []error
	if o.Has("dsn") {
		if d := o.Secret("dsn").Reveal(); !source.IsSecretRef(d) {
			if _, err := mysql.ParseDSN(d); err != nil {
				errs = append(errs, &source.OptionError{Key: "dsn", Msg: "not a valid go-sql-driver DSN"})
			}
		}
		for _, k := range []string{"host", "port", "socket", "user", "password", "database"} {
			if o.Has(k) {
				errs = append(errs, &source.OptionError{Key: k, Msg: "not allowed together with dsn"})
			}
		}
	} else if !o.Has("user") {
		errs = append(errs, &source.OptionError{Key: "user", Msg: "required (or give dsn)"})
	}
	if o.Has("socket") && (o.Has("host") || o.Has("port")) {
		errs = append(errs, &source.OptionError{Key: "socket", Msg: "not allowed together with host or port"})
	}
	for k := range o.Map("params") {
		if !sysVarName.MatchString(k) {
			errs = append(errs, &source.OptionError{Key: "params." + k, Msg: "not a system variable name"})
		} else if mysqlManagedParams[strings.ToLower(k)] {
			errs = append(errs, &source.OptionError{Key: "params." + k, Msg: "managed by snapstore, cannot be set"})
		}
	}
	return errors.Join(errs...)
}

// mysqlConfig builds the driver configuration from resolved options.
func mysqlConfig(o source.OptionValues, logger *slog.Logger) (*mysql.Config, error) {
	var cfg *mysql.Config
	if o.Has("dsn") {
		var err error
		cfg, err = mysql.ParseDSN(o.Secret("dsn").Reveal())
		if err != nil {
			// The driver's message may quote part of the DSN; keep it out.
			return nil, &source.OptionError{Key: "dsn", Msg: "not a valid go-sql-driver DSN"}
		}
	} else {
		cfg = mysql.NewConfig()
		cfg.User = o.String("user")
		cfg.Passwd = o.Secret("password").Reveal()
		cfg.DBName = o.String("database")
		if o.Has("socket") {
			cfg.Net = "unix"
			cfg.Addr = o.String("socket")
		} else {
			host := o.String("host")
			if host == "" {
				host = "127.0.0.1"
			}
			cfg.Net = "tcp"
			cfg.Addr = net.JoinHostPort(host, strconv.FormatInt(o.Int("port", 3306), 10))
		}
	}
	if o.Has("tls") {
		cfg.TLSConfig = o.String("tls")
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	for k, v := range o.Map("params") {
		cfg.Params[k] = v
	}
	// Every session reads TIMESTAMP in UTC (docs/types.md, "Time zones").
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.ParseTime = false
	cfg.InterpolateParams = true
	cfg.MultiStatements = false
	cfg.AllowAllFiles = false
	cfg.ColumnsWithAlias = false
	cfg.Loc = time.UTC
	cfg.Timeout = o.Duration("connect_timeout", source.DefaultConnectTimeout)
	// A source that stops answering (frozen, half-open TCP) must fail the
	// run rather than hold the dataset forever; 0s turns the bound off.
	cfg.ReadTimeout = o.Duration("read_timeout", defaultReadTimeout)
	cfg.Logger = driverLogger{logger}
	return cfg, nil
}

// defaultReadTimeout is read_timeout's default: one read of a chunk query's
// result (or of the next packet) may wait this long before the run fails.
const defaultReadTimeout = 5 * time.Minute

// driverLogger bridges the driver's logger into slog at warn level.
type driverLogger struct{ l *slog.Logger }

func (d driverLogger) Print(v ...any) {
	d.l.Warn("mysql driver: " + strings.TrimSpace(fmt.Sprint(v...)))
}

// Open implements Connector: a lazy pool (nothing is dialled until used).
func (mysqlConnector) Open(ctx context.Context, sc source.SourceConfig) (source.Source, error) {
	cfg, err := mysqlConfig(sc.Options, sc.Logger)
	if err != nil {
		return nil, err
	}
	secrets := []string{cfg.Passwd}
	if sc.Options.Has("dsn") {
		secrets = append(secrets, sc.Options.Secret("dsn").Reveal())
	}
	c, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, source.ScrubError(&source.OptionError{Key: "tls", Msg: err.Error()}, secrets...)
	}
	db := sql.OpenDB(boundedConnector{Connector: c, timeout: cfg.Timeout})
	source.ApplyPool(db, sc.Pool)
	return &mysqlSource{
		name:      sc.Name,
		addr:      source.SourceAddr{Connection: sc.Name, Type: "mysql", Addr: cfg.Addr, ConnectTimeout: cfg.Timeout, ServerMessage: serverMessage},
		db:        db,
		dbName:    cfg.DBName,
		chunkRows: int(sc.Options.Int("chunk_rows", source.DefaultChunkRows)),
		timeout:   cfg.Timeout,
		readTO:    cfg.ReadTimeout,
		secrets:   secrets,
		log:       sc.Logger,
	}, nil
}

// boundedConnector bounds the opening of each new connection, dial and
// handshake, by timeout (connect_timeout): the driver's own Timeout covers
// the dial alone, so a server that accepts TCP and never answers would
// hold a run until read_timeout. A pooled connection's wait for a free
// slot is not a connect and is not bounded here.
type boundedConnector struct {
	driver.Connector
	timeout time.Duration
}

// Connect implements driver.Connector.
func (c boundedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	if c.timeout <= 0 {
		return c.Connector.Connect(ctx)
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.Connector.Connect(cctx)
	if err != nil && ctx.Err() == nil && cctx.Err() != nil {
		return nil, &source.ConnectTimeoutError{Bound: c.timeout, Err: err}
	}
	return conn, err
}

// Test implements Tester: connect, VERSION(), SELECT 1 under connect_timeout.
func (s *mysqlSource) Test(ctx context.Context) source.TestResult {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res := source.TestResult{}
	fail := func(err error) source.TestResult {
		res.Cause = classifyMySQL(ctx, err)
		res.Message = s.scrub(err).Error()
		res.Latency = time.Since(start)
		return res
	}
	conn, err := s.conn(ctx)
	if err != nil {
		return source.FailedTest(source.WithBound(err, s.timeout, "connect_timeout"), time.Since(start))
	}
	defer conn.Close()
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&res.ServerVersion); err != nil {
		return fail(err)
	}
	var one int
	if err := conn.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fail(err)
	}
	res.OK = one == 1
	res.Latency = time.Since(start)
	return res
}

// MySQL server error numbers the classification uses.
const (
	erDBAccessDenied     = 1044
	erTableAccessDenied  = 1142 // ER_TABLEACCESS_DENIED_ERROR: SELECT denied on a table
	erColAccessDenied    = 1143 // ER_COLUMNACCESS_DENIED_ERROR
	erAccessDenied       = 1045
	erBadDB              = 1049
	erNoSuchTable        = 1146
	erTableDefChanged    = 1412 // ER_TABLE_DEF_CHANGED: a table of a snapshot was truncated or altered since
	erAccessDeniedNoPass = 1698
	erNotSupportedAuth   = 1251
)

// classifyMySQL maps a driver error to a TestResult cause: "unreachable",
// "auth", "unknown_database", "timeout" or "error".
func classifyMySQL(ctx context.Context, err error) string {
	var me *mysql.MySQLError
	var ne net.Error
	var oe *source.OptionError
	switch {
	case errors.As(err, &oe):
		return "config"
	case errors.As(err, &me):
		switch me.Number {
		case erAccessDenied, erDBAccessDenied, erAccessDeniedNoPass, erNotSupportedAuth:
			return "auth"
		case erBadDB:
			return "unknown_database"
		}
		return "error"
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn):
		return "unreachable"
	}
	var de *net.DNSError
	var op *net.OpError
	if errors.As(err, &de) || errors.As(err, &op) {
		return "unreachable"
	}
	return "error"
}

// wrapMySQLErr marks a driver error with ErrSourceAuth,
// ErrSourceUnavailable or ErrTableChanged when it is one, keeping the
// driver error in the chain.
func wrapMySQLErr(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && me.Number == erTableDefChanged {
		// A consistent snapshot cannot read a table whose definition
		// changed after it began (TRUNCATE recreates the table).
		return fmt.Errorf("%w (truncated or altered since the run's snapshot began); nothing is committed, the next run reads it as it is then: %w", source.ErrTableChanged, err)
	}
	if me := (*mysql.MySQLError)(nil); errors.As(err, &me) && (me.Number == erTableAccessDenied || me.Number == erColAccessDenied) {
		return fmt.Errorf("%w: %w", source.ErrSourcePermission, err)
	}
	switch classifyMySQL(ctx, err) {
	case "auth":
		return fmt.Errorf("%w: %w", source.ErrSourceAuth, err)
	case "unreachable", "timeout", "unknown_database":
		return fmt.Errorf("%w: %w", source.ErrSourceUnavailable, err)
	}
	return err
}

var mysqlSystemSchemas = []any{"mysql", "information_schema", "performance_schema", "sys"}

// Resources implements ResourceLister: the tables and views of the
// configured database, or of every accessible non-system schema when no
// database is configured, with InnoDB's estimated row counts. A view has
// none (TABLE_ROWS is NULL): UnknownRows, as PostgreSQL's views, rather
// than a false 0.
func (s *mysqlSource) Resources(ctx context.Context) ([]source.Resource, error) {
	var schemaFilter string
	var args []any
	if s.dbName != "" {
		schemaFilter = `TABLE_SCHEMA = ?`
		args = append(args, s.dbName)
	} else {
		schemaFilter = `TABLE_SCHEMA NOT IN (?, ?, ?, ?)`
		args = mysqlSystemSchemas
	}
	q := `SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_ROWS FROM information_schema.TABLES WHERE ` +
		schemaFilter + ` ORDER BY TABLE_SCHEMA, TABLE_NAME`
	conn, err := s.conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.scrub(fmt.Errorf("listing tables of data connection %q: %w", s.name, wrapMySQLErr(ctx, err)))
	}
	defer rows.Close()
	var out []source.Resource
	for rows.Next() {
		var r source.Resource
		var typ string
		var est sql.NullInt64
		if err := rows.Scan(&r.Schema, &r.Name, &typ, &est); err != nil {
			return nil, fmt.Errorf("listing tables of data connection %q: %w", s.name, err)
		}
		r.Type = mysqlTableType(typ)
		r.EstimatedRows = source.UnknownRows
		if est.Valid {
			r.EstimatedRows = est.Int64
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.scrub(fmt.Errorf("listing tables of data connection %q: %w", s.name, wrapMySQLErr(ctx, err)))
	}
	rows.Close()
	keys, err := mysqlDefaultKeys(ctx, conn, schemaFilter, args)
	if err != nil {
		return nil, s.scrub(fmt.Errorf("listing the keys of data connection %q: %w", s.name, wrapMySQLErr(ctx, err)))
	}
	for i := range out {
		out[i].Key = keys[[2]string{out[i].Schema, out[i].Name}]
	}
	return out, nil
}

// mysqlDefaultKeys returns, per (schema, table) of the schemas that
// schemaFilter (SQL over TABLE_SCHEMA, with args) selects, the key a run
// chooses without key_columns (mysqlTable.pickKey): the primary key, else
// the unique key over NOT NULL columns of a key kind with the fewest
// columns. Tables without one are absent.
func mysqlDefaultKeys(ctx context.Context, conn *sql.Conn, schemaFilter string, args []any) (map[[2]string][]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME, s.COLUMN_NAME,
			COALESCE(c.IS_NULLABLE, 'YES'), LOWER(COALESCE(c.DATA_TYPE, '')), LOWER(COALESCE(c.COLUMN_TYPE, ''))
		FROM information_schema.STATISTICS s LEFT JOIN information_schema.COLUMNS c
			ON c.TABLE_SCHEMA = s.TABLE_SCHEMA AND c.TABLE_NAME = s.TABLE_NAME AND c.COLUMN_NAME = s.COLUMN_NAME
		WHERE s.NON_UNIQUE = 0 AND s.`+schemaFilter+`
		ORDER BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME, s.SEQ_IN_INDEX`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type table struct {
		uniques []mysqlIndex
		bad     map[string]bool // indexes with a column that cannot be a key
	}
	tables := map[[2]string]*table{}
	for rows.Next() {
		var schema, name, index string
		var col sql.NullString
		var c mysqlColumn
		var nullable string
		if err := rows.Scan(&schema, &name, &index, &col, &nullable, &c.dataType, &c.columnType); err != nil {
			return nil, err
		}
		k := [2]string{schema, name}
		tb := tables[k]
		if tb == nil {
			tb = &table{bad: map[string]bool{}}
			tables[k] = tb
		}
		if n := len(tb.uniques); n == 0 || tb.uniques[n-1].name != index {
			tb.uniques = append(tb.uniques, mysqlIndex{name: index})
		}
		u := &tb.uniques[len(tb.uniques)-1]
		u.cols = append(u.cols, col.String)
		c.name = col.String
		kind, err := mysqlKind(&c, false)
		if !col.Valid || nullable != "NO" || err != nil || !source.KeyKindOK(kind) {
			tb.bad[index] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[[2]string][]string{}
	for k, tb := range tables {
		sortMySQLKeys(tb.uniques)
		for _, u := range tb.uniques {
			if !tb.bad[u.name] {
				out[k] = u.cols
				break
			}
		}
	}
	return out, nil
}

func mysqlTableType(t string) string {
	if strings.EqualFold(t, "VIEW") {
		return "view"
	}
	return "table"
}

// quoteMySQLIdent quotes a MySQL identifier with backticks, doubling any
// backtick inside, so reserved words, mixed case, dots and backticks are
// all safe.
func quoteMySQLIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// serverMessage returns the message of a MySQL server's error in err's
// chain, as the driver renders it (source.SourceAddr.ServerMessage).
func serverMessage(err error) (string, bool) {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Error(), true
	}
	return "", false
}

func init() { source.Register("mysql", mysqlConnector{}) }
