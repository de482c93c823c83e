package mysql

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/snapstore/snapstore/adapters/source"
)

// mysqlSource is an open mysql data connection (source.Source): one
// *sql.DB, the pool a table reader (read.go) or a point (point.go) takes
// its connections from. Its other capabilities, Test and Resources, are
// in connector.go.
type mysqlSource struct {
	name      string
	addr      source.SourceAddr
	db        *sql.DB
	dbName    string
	chunkRows int
	timeout   time.Duration
	readTO    time.Duration // read_timeout; 0 for none
	secrets   []string
	log       *slog.Logger
}

func (s *mysqlSource) Close() error { return s.db.Close() }

// IdentQuote implements source.IdentQuoter: MySQL quotes identifiers
// with backticks.
func (s *mysqlSource) IdentQuote() byte { return '`' }

// CloseIdle implements IdleCloser.
func (s *mysqlSource) CloseIdle() { s.db.SetMaxIdleConns(-1) }

// scrub hides this connection's secrets in err.
func (s *mysqlSource) scrub(err error) error { return source.ScrubError(err, s.secrets...) }

// conn takes one connection of the pool, opening it when none is idle; a
// failure is a *SourceError naming the server and the cause.
func (s *mysqlSource) conn(ctx context.Context) (*sql.Conn, error) {
	c, err := s.db.Conn(ctx)
	if err != nil {
		return nil, source.NewSourceError(ctx, s.addr, classifyMySQL(ctx, err), s.scrub(err))
	}
	return c, nil
}
