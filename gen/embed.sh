#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# GN actions run scripts, not the programs the build made: this runs gen/embed for an action.
# Usage: embed.sh [--stamp FILE] EMBED ARGS...   (--stamp: touch FILE when EMBED succeeds, for
# actions such as the staleness check that produce no other output)
stamp=
if [ "$1" = "--stamp" ]; then stamp=$2; shift 2; fi
"$@" || exit $?
if [ -n "$stamp" ]; then : >"$stamp"; fi
