/* SPDX-License-Identifier: BSD-3-Clause */
/* The scheduler's graph as Graphviz DOT (GrCUDA fig. 12): an element a node,
 * labelled with what it is, where it ran and the bytes it copied in; a
 * dependency an edge.  A dependency on an element already done when the
 * later one was placed has no edge (the graph leaves it out); the nodes'
 * `placed` and `done` attributes, on the scheduler's clock of adds and
 * finishes, say which those were (done 0: not done at the export). */
#include <inttypes.h>

#include "runtime/sched/sched_exec.h"
#include "services/log.h"

static const char *const kinds[] = {"kernel", "host access", "prefetch", "advice"};

grain_status_t grain_sched_export_dot(grain_sched_t *s, FILE *out)
{
    if (s == NULL || out == NULL)
        return grain_fail(GRAIN_ERR_INVALID, "grain_sched_export_dot needs a scheduler and a file");
    fprintf(out, "digraph grain_sched {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (size_t e = 0; e < s->n_elems; e++) {
        const sched_elem_t *el = &s->elems[e];
        fprintf(out, "  e%zu [label=\"%s\\n", e, el->kind == ELEM_KERNEL ? el->name : kinds[el->kind]);
        if (el->location == SCHED_HOST)
            fprintf(out, "host");
        else
            fprintf(out, "device %u, stream %u", el->location - 1, el->stream);
        fprintf(out,
                "\\n%" PRIu64 " bytes in\", device=%d, stream=%u, bytes=%" PRIu64 ", placed=%" PRIu64
                ", done=%" PRIu64 "%s];\n",
                el->bytes_in, (int)el->location - 1, el->stream, el->bytes_in, el->placed_tick, el->done_tick,
                el->failed ? ", color=red" : "");
    }
    for (size_t e = 0; e < s->n_elems; e++)
        for (size_t i = 0; i < s->elems[e].n_parents; i++)
            fprintf(out, "  e%" PRIu32 " -> e%zu;\n", s->elems[e].waits[i], e);
    fprintf(out, "}\n");
    return ferror(out) ? grain_fail(GRAIN_ERR_INVALID, "grain_sched_export_dot: the file refused the graph")
                       : GRAIN_OK;
}
