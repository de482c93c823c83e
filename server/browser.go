package server

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/labstack/echo/v4"
)

// What a browser may send on another site's behalf, refused by one rule for
// the API and the console alike (CheckBrowser, checkContentType):
//
//  1. Without auth tokens, only a request whose Host names a loopback
//     address (127.0.0.0/8, ::1, localhost, any port) is answered: a page
//     of a DNS name rebound to 127.0.0.1 sends its own name as Host
//     (421 host_not_loopback).
//  2. A state-changing request (POST, PUT, PATCH, DELETE) that a browser
//     marks as sent by another site is refused: Sec-Fetch-Site cross-site
//     or same-site, or, from a browser that sends no Sec-Fetch-Site, an
//     Origin other than the Host (403 cross_origin). This is net/http's
//     CrossOriginProtection; clients that are not browsers (the CLI, curl,
//     cluster nodes) send neither header and pass.
//  3. A request body is read only as the media type it declares: the API
//     takes application/json (UTF-8, with or without a charset) and
//     answers anything else 415, so that a form or a text/plain body, which
//     a page may post to any site without a CORS preflight, is never read
//     as JSON.

// Refusals of a request a browser may have sent on another site's behalf.
var (
	errHostNotLoopback = errors.New("server: host not loopback")
	errCrossOrigin     = errors.New("server: cross-origin request")
)

// CheckBrowser applies rules 1 and 2 to r, logging a refusal.
func (s *Server) CheckBrowser(r *http.Request) error {
	if !s.tokens.enabled() && !loopbackHost(r) {
		s.log.Warn("request refused: host is not loopback", "method", r.Method, "path", r.URL.Path, "host", r.Host, "remote", r.RemoteAddr)
		return &refusal{kind: errHostNotLoopback, msg: fmt.Sprintf("without auth tokens this server answers only to a loopback host (127.0.0.1, [::1], localhost), not %q", r.Host)}
	}
	if err := s.crossOrigin.Check(r); err != nil {
		s.log.Warn("request refused: cross-origin", "method", r.Method, "path", r.URL.Path, "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "remote", r.RemoteAddr)
		return &refusal{kind: errCrossOrigin, msg: "cross-origin request refused: a request that changes something is taken only from this server's own pages or from a client that is not a browser"}
	}
	return nil
}

// loopbackHost reports whether the Host of r names a loopback address.
func loopbackHost(r *http.Request) bool {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// checkContentType applies rule 3 to an API request that carries a body:
// its Content-Type must be application/json, in UTF-8, not compressed;
// anything else, no Content-Type included, is 415.
func checkContentType(r *http.Request) error {
	if r.ContentLength == 0 {
		return nil
	}
	if ce := r.Header.Get(echo.HeaderContentEncoding); ce != "" && !strings.EqualFold(ce, "identity") {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are plain JSON; Content-Encoding %q is not accepted", ce))
	}
	ct := r.Header.Get(echo.HeaderContentType)
	if ct == "" {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, "a request body needs Content-Type: application/json")
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != echo.MIMEApplicationJSON {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are JSON (Content-Type: application/json), not %q", ct))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return echo.NewHTTPError(http.StatusUnsupportedMediaType, fmt.Sprintf("request bodies are UTF-8 JSON, not charset %q", cs))
	}
	return nil
}
