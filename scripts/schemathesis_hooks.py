"""schemathesis hooks of scripts/schemathesis.sh.

The one rule between parameters that an OpenAPI 3.0 document cannot
state: a read takes at most one of version, as_of and tag (the server
answers 400 naming version; server/openapi.yaml says so). Cases that give
more are not sent, in every phase.
"""

import schemathesis

SELECTORS = ("version", "as_of", "tag")


@schemathesis.hook
def filter_case(ctx, case):
    query = case.query or {}
    return sum(1 for k in SELECTORS if k in query) <= 1
