package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/snapstore/snapstore/adapters"
)

func (s *Server) listConnections(c echo.Context) error {
	cs, err := s.svc.ListConnections(c.Request().Context())
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []adapters.Connection{}
	}
	return c.JSON(http.StatusOK, map[string]any{"connections": cs})
}

func (s *Server) createConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeBody(c, &spec, true); err != nil {
		return err
	}
	if spec.Name == "" {
		return badField("body.name", "a connection needs a name")
	}
	conn, err := s.svc.CreateConnection(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, conn)
}

func (s *Server) getConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	conn, err := s.svc.GetConnection(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, conn)
}

func (s *Server) putConnection(c echo.Context) error {
	var spec adapters.ConnectionSpec
	if err := decodeBody(c, &spec, true); err != nil {
		return err
	}
	if err := nameFromPath(c, &spec.Name); err != nil {
		return err
	}
	conn, created, err := s.svc.PutConnection(c.Request().Context(), spec)
	if err != nil {
		return err
	}
	return c.JSON(createdStatus(created), conn)
}

func (s *Server) dropConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	force, err := parseBoolQuery(c, "force")
	if err != nil {
		return err
	}
	if err := s.svc.DropConnection(c.Request().Context(), name, force); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) testConnection(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	res, err := s.svc.TestConnection(c.Request().Context(), name)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) listResources(c echo.Context) error {
	name, err := pathParam(c, "name")
	if err != nil {
		return err
	}
	rs, err := s.svc.Resources(c.Request().Context(), name)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []adapters.Resource{}
	}
	return c.JSON(http.StatusOK, map[string]any{"resources": rs})
}
