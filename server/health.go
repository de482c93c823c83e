package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

// healthz answers GET /healthz: the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok", "version": s.build})
}

// readyz answers GET /readyz: the store answers and the server is not
// shutting down.
func (s *Server) readyz(c echo.Context) error {
	if s.stopping.Load() {
		return fmt.Errorf("server: %w", adapters.ErrShuttingDown)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	if _, err := s.db.Datasets(ctx); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
}
