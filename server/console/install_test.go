package console

import _ "github.com/snapstore/snapstore/adapters/install" // the connection types the tests open
