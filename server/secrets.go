package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// rotateSecrets encrypts every stored secret of the API connections again
// with the first configured key (adapters.Service.RotateSecrets): those in
// clear and those encrypted with another key. Safe to repeat.
func (s *Server) rotateSecrets(c echo.Context) error {
	rep, err := s.svc.RotateSecrets(c.Request().Context())
	if err != nil {
		return err
	}
	s.log.Info("secrets rotated", "key_id", rep.KeyID, "secrets", rep.Secrets, "connections", rep.Connections, TokenAttr(c.Get("token")))
	return c.JSON(http.StatusOK, rep)
}
