package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"
)

// answerByParam is the shape of a handler that reads one thing named by the
// path parameter param: call gets the unescaped value, and its result is
// answered as 200 JSON.
func answerByParam[T any](c echo.Context, param string, call func(context.Context, string) (T, error)) error {
	v, err := pathParam(c, param)
	if err != nil {
		return err
	}
	out, err := call(c.Request().Context(), v)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

// answerList answers 200 {key: items}; no items is [], never null.
func answerList[T any](c echo.Context, key string, items []T) error {
	if items == nil {
		items = []T{}
	}
	return c.JSON(http.StatusOK, map[string]any{key: items})
}

// answerNoContent answers 204 unless err is set.
func answerNoContent(c echo.Context, err error) error {
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// createdStatus is the status of a PUT: 201 when it created the thing, 200
// when it replaced it.
func createdStatus(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}
