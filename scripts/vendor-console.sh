#!/usr/bin/env bash
# vendor-console.sh: fetch the console's third-party browser files once from
# the npm registry (npm pack: no Node toolchain in the build) into
# server/console/static/vendor/, which is committed. Run it only to move to
# another version; then update the table in vendor/README.md and check the
# console (go test ./server ./tests/e2e -run Console).
#
#   scripts/vendor-console.sh [HTMX_VERSION [SWAGGER_UI_VERSION]]
set -euo pipefail

htmx=${1:-2.0.11}
swagger=${2:-5.35.0}
here=$(cd "$(dirname "$0")/.." && pwd)
dst=$here/server/console/static/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$tmp"
npm pack --silent "htmx.org@$htmx" "swagger-ui-dist@$swagger" >/dev/null
mkdir h s
tar xzf "htmx.org-$htmx.tgz" -C h
tar xzf "swagger-ui-dist-$swagger.tgz" -C s
cp h/package/dist/htmx.min.js h/package/LICENSE "$dst/htmx/"
cp s/package/swagger-ui-bundle.js s/package/swagger-ui-bundle.js.LICENSE.txt \
	s/package/swagger-ui.css s/package/LICENSE s/package/NOTICE "$dst/swagger-ui/"
sha256sum "htmx.org-$htmx.tgz" "swagger-ui-dist-$swagger.tgz"
echo "vendor-console.sh: htmx.org $htmx and swagger-ui-dist $swagger copied to $dst"
