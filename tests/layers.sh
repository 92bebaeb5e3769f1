#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The folders of docs/design.md "Layers" include one way only: services/
# uses none of the others, transports/ and backends/ use services/ alone,
# and only runtime/ (with the tools, tests and benchmarks above it) may use
# them all.  Prints every include that points the wrong way.
#   layers.sh <source dir>
cd "$1" || exit 2
bad=0
check() { # check <folder> <folders it must not include>
    for f in $(find "$1" -name '*.[ch]'); do
        for up in $2; do
            grep -Hn "#include \"$up/" "$f" && bad=1
        done
    done
}
check services "runtime transports backends"
check transports "runtime backends"
check backends "runtime transports"
if [ $bad -ne 0 ]; then
    echo "layers: the includes above point up or across (docs/design.md, Layers)"
    exit 1
fi
echo "layers: every include points down"
