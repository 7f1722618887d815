/* The compiled kernel of grid_vec/grid/newton.py: Newton power flows of rows in any topology,
 * and their results, in one call (see newton.py for the method and the layout's arrays).
 *
 * Every row is solved on the grid's *union layout*: every bus bar of every substation has a
 * slot, the bus admittance matrix has one sparsity pattern (every branch end on any bus bar of
 * its substation), and the Newton Jacobian has two unknowns per bus bar (angle, magnitude) on
 * one pattern whose LU fill was found once per grid (newton.py). A row's topology only decides
 * values: an unknown a row does not solve for (a bus bar out of the power flow, the slack, a
 * PV magnitude) gets a unit row and column, so its factorisation is that of the row's own
 * reduced Jacobian, in a fixed order; a zero multiplier is skipped, so such unknowns cost
 * almost nothing. No symbolic analysis per topology, no object per row.
 *
 * Also the core's any_nonzero (grid_vec.core.state.any_true), compiled here beside it.
 *
 * Plain C built by `pip install`, as chord_kernel.c, whose result code it shares
 * (flow_results.h). Arrays come through the buffer protocol (C-contiguous, checked by
 * newton.py before the call).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow_results.h"

enum { HEADER = 12 };

/* The grid's union layout (newton._pack's order). */
typedef struct {
    int64_t n_sub, n_bus, nb, nl, ng, ns, nnz_y, m, nnz_j, slack_gen, max_iter, n_elem;
    const int64_t *y_indptr, *y_indices, *y_diag;
    const int64_t *or_sub, *ex_sub, *load_sub, *gen_sub, *storage_sub, *gen_pv, *has_shunt;
    const int64_t *perm, *unknown, *j_indptr, *j_indices, *j_diag, *y_to_j;
    double sn, tol, pivot_floor;
    const double *vn, *q_fixed, *q_range;
    const cplx *y11, *y12, *y21, *y22, *shunt;
} Layout;

static int unpack(Layout *g, const int64_t *ints, Py_ssize_t n_ints, const double *reals,
                  Py_ssize_t n_reals, const cplx *c, Py_ssize_t n_cplx) {
    if (n_ints < HEADER) return -1;
    g->n_sub = ints[0]; g->n_bus = ints[1]; g->nb = ints[2]; g->nl = ints[3]; g->ng = ints[4];
    g->ns = ints[5]; g->nnz_y = ints[6]; g->m = ints[7]; g->nnz_j = ints[8];
    g->slack_gen = ints[9]; g->max_iter = ints[10]; g->n_elem = ints[11];
    const int64_t *o = ints + HEADER;
    g->y_indptr = o; o += g->n_bus + 1;
    g->y_indices = o; o += g->nnz_y;
    g->y_diag = o; o += g->n_bus;
    g->or_sub = o; o += g->nb;
    g->ex_sub = o; o += g->nb;
    g->load_sub = o; o += g->nl;
    g->gen_sub = o; o += g->ng;
    g->storage_sub = o; o += g->ns;
    g->gen_pv = o; o += g->ng;
    g->has_shunt = o; o += g->n_bus;
    g->perm = o; o += g->m;
    g->unknown = o; o += g->m;
    g->j_indptr = o; o += g->m + 1;
    g->j_indices = o; o += g->nnz_j;
    g->j_diag = o; o += g->m;
    g->y_to_j = o; o += 4 * g->nnz_y;
    if (o - ints != n_ints) return -1;
    if (n_reals != 3 + g->n_bus + 2 * g->ng) return -1;
    g->sn = reals[0]; g->tol = reals[1]; g->pivot_floor = reals[2];
    g->vn = reals + 3;
    g->q_fixed = g->vn + g->n_bus;
    g->q_range = g->q_fixed + g->ng;
    if (n_cplx != 4 * g->nb + g->n_bus) return -1;
    g->y11 = c; g->y12 = c + g->nb; g->y21 = g->y12 + g->nb; g->y22 = g->y21 + g->nb;
    g->shunt = g->y22 + g->nb;
    if (g->m != 2 * g->n_bus || g->n_elem != g->nl + g->ng + 2 * g->nb + g->ns) return -1;
    return 0;
}

/* The work arrays of one row. */
typedef struct {
    int64_t *active, *pv_gen, *pv_count, *reach, *queue;  /* (n_bus): in the pf; its first
                                                             PV generator and their count */
    double *q_total;                               /* (n_bus): its PV generators' Q ranges */
    int64_t *or_bus, *ex_bus, *load_bus, *gen_bus, *storage_bus;
    int64_t *fixed;                                /* (m): an unknown the row does not solve */
    /* the row's own part of the filled pattern (see own_pattern): its solved positions of the
     * order, and for each the union positions of its entries in solved columns */
    int64_t n_own, *own_pos, *own_row, *own_ptr, *own_diag, *own_at, *own_col;
    cplx *unit;                                    /* (n_bus): V / |V| */
    double *q_share, *vm, *F, *x, *jx, *w;         /* jx: (nnz_j) the Jacobian */
    double *lu;                                    /* (nnz_j) its LU, the row's own entries */
    cplx *ydata, *S, *V, *cur, *start;             /* start: the first guess' V / |V| */
} Work;

/* Position of entry (i, j) in the union Ybus (it is in the pattern: newton.py built it so). */
static int64_t y_at(const Layout *g, int64_t i, int64_t j) {
    for (int64_t k = g->y_indptr[i]; k < g->y_indptr[i + 1]; ++k)
        if (g->y_indices[k] == j) return k;
    return -1;
}

static inline int64_t bus_of(const Layout *g, int64_t sub, int32_t bar) {
    return bar < 1 ? -1 : sub + (int64_t)(bar - 1) * g->n_sub;
}

enum { REFUSED = -2, DIVERGED = -1 };

/* The row's network from its bus bars: element buses, the buses in the power flow, its
 * admittances, PV buses and their setpoints, bus injections. Returns 0, or REFUSED for a row
 * the kernel leaves to lightsim2grid: the slack off, voltage-regulating generators of one
 * bus bar with different setpoints or no reactive range, a part of the grid the slack does
 * not reach (a bus bar left with a shunt alone among them: lightsim2grid keeps it in the
 * power flow, and its Jacobian is then singular). */
static int row_network(const Layout *g, Work *w, const int32_t *bars, const double *inj,
                       const double *storage_p, const double *gen_v) {
    const int64_t nl = g->nl, ng = g->ng, nb = g->nb, n_bus = g->n_bus;
    const int32_t *load_bar = bars, *gen_bar = bars + nl, *or_bar = gen_bar + ng,
                  *ex_bar = or_bar + nb, *sto_bar = ex_bar + nb;
    for (int64_t i = 0; i < n_bus; ++i) {
        w->active[i] = g->has_shunt[i];  /* lightsim2grid keeps a shunt's bus in the pf */
        w->pv_gen[i] = -1;
        w->pv_count[i] = 0;
        w->q_total[i] = 0;
        w->S[i] = 0;
    }
    double inv_sn = 1.0 / g->sn;
    for (int64_t j = 0; j < nl; ++j) {
        int64_t b = w->load_bus[j] = bus_of(g, g->load_sub[j], load_bar[j]);
        if (b < 0) continue;
        w->active[b] = 1;
        w->S[b] -= (inj[j] + I * inj[nl + j]) * inv_sn;
    }
    for (int64_t j = 0; j < ng; ++j) {
        int64_t b = w->gen_bus[j] = bus_of(g, g->gen_sub[j], gen_bar[j]);
        w->q_share[j] = 0;
        if (b < 0) continue;
        w->active[b] = 1;
        w->S[b] += (inj[2 * nl + j] + I * g->q_fixed[j]) * inv_sn;
        if (!g->gen_pv[j]) continue;
        /* generators holding one bus' voltage together: one setpoint (lightsim2grid refuses
         * two), their reactive power shared in proportion to their reactive ranges */
        if (w->pv_gen[b] >= 0 && gen_v[w->pv_gen[b]] != gen_v[j]) return REFUSED;
        if (w->pv_gen[b] < 0) w->pv_gen[b] = j;
        w->pv_count[b] += 1;
        w->q_total[b] += g->q_range[j];
    }
    for (int64_t j = 0; j < ng; ++j) {
        int64_t b = w->gen_bus[j];
        if (b < 0 || !g->gen_pv[j]) continue;
        if (w->pv_count[b] == 1) {
            w->q_share[j] = 1;
        } else {
            if (!(w->q_total[b] > 0)) return REFUSED;
            w->q_share[j] = g->q_range[j] / w->q_total[b];
        }
    }
    for (int64_t j = 0; j < g->ns; ++j) {
        int64_t b = w->storage_bus[j] = bus_of(g, g->storage_sub[j], sto_bar[j]);
        if (b < 0) continue;
        w->active[b] = 1;
        w->S[b] -= storage_p[j] * inv_sn;
    }
    for (int64_t k = 0; k < g->nnz_y; ++k) w->ydata[k] = 0;
    for (int64_t i = 0; i < n_bus; ++i) w->ydata[g->y_diag[i]] = g->shunt[i];
    for (int64_t j = 0; j < nb; ++j) {
        int64_t a = bus_of(g, g->or_sub[j], or_bar[j]), b = bus_of(g, g->ex_sub[j], ex_bar[j]);
        if (a < 0 || b < 0) {
            w->or_bus[j] = w->ex_bus[j] = -1;
            continue;
        }
        w->or_bus[j] = a;
        w->ex_bus[j] = b;
        w->active[a] = w->active[b] = 1;
        w->ydata[g->y_diag[a]] += g->y11[j];
        w->ydata[g->y_diag[b]] += g->y22[j];
        w->ydata[y_at(g, a, b)] += g->y12[j];
        w->ydata[y_at(g, b, a)] += g->y21[j];
    }
    int64_t slack = g->slack_gen >= 0 ? w->gen_bus[g->slack_gen] : -1;
    if (slack < 0) return REFUSED;
    /* every bus in the power flow must be reached from the slack through branches in service
     * (a nonzero off-diagonal admittance: the pattern's other entries are zero this row) */
    for (int64_t i = 0; i < n_bus; ++i) w->reach[i] = 0;
    int64_t head = 0, tail = 0;
    w->queue[tail++] = slack;
    w->reach[slack] = 1;
    while (head < tail) {
        int64_t i = w->queue[head++];
        for (int64_t k = g->y_indptr[i]; k < g->y_indptr[i + 1]; ++k) {
            int64_t j = g->y_indices[k];
            if (!w->reach[j] && w->ydata[k] != 0) {
                w->reach[j] = 1;
                w->queue[tail++] = j;
            }
        }
    }
    for (int64_t i = 0; i < n_bus; ++i)
        if (w->active[i] && !w->reach[i]) return REFUSED;
    /* the unknowns: an angle for every bus in the pf but the slack, a magnitude for its PQ
     * buses; the first guess' magnitude at a PV bus (and the slack) is its setpoint */
    for (int64_t i = 0; i < n_bus; ++i) {
        int fixed_angle = !w->active[i] || i == slack;
        int fixed_magnitude = fixed_angle || w->pv_gen[i] >= 0;
        w->fixed[2 * i] = fixed_angle;
        w->fixed[2 * i + 1] = fixed_magnitude;
        if (w->active[i] && w->pv_gen[i] >= 0) w->vm[i] = gen_v[w->pv_gen[i]];
    }
    w->vm[slack] = gen_v[g->slack_gen];
    return 0;
}

/* I = Y V and the mismatch F (angle rows: P, magnitude rows: Q; 0 for a fixed unknown);
 * returns max |F| (NaN stays NaN). */
static double mismatch(const Layout *g, Work *w) {
    double worst = 0;
    for (int64_t i = 0; i < g->n_bus; ++i) {
        cplx acc = 0;
        if (w->active[i])
            for (int64_t k = g->y_indptr[i]; k < g->y_indptr[i + 1]; ++k)
                acc += w->ydata[k] * w->V[g->y_indices[k]];
        w->cur[i] = acc;
        cplx s = w->V[i] * conj(acc) - w->S[i];
        double fp = w->fixed[2 * i] ? 0 : creal(s), fq = w->fixed[2 * i + 1] ? 0 : cimag(s);
        w->F[2 * i] = fp;
        w->F[2 * i + 1] = fq;
        if (fabs(fp) > worst || isnan(fp)) worst = fabs(fp);
        if (fabs(fq) > worst || isnan(fq)) worst = fabs(fq);
    }
    return worst;
}

/* The Jacobian's values on the filled pattern (permuted order): dS_i/dVa_k = -j V_i conj(Y_ik
 * V_k), dS_i/dVm_k = V_i conj(Y_ik u_k), plus j V_i conj(I_i) and conj(I_i) u_i on the
 * diagonal (u = V / |V|); P rows take the real parts, Q rows the imaginary ones; a fixed
 * unknown's row and column are those of the identity. */
static void jacobian(const Layout *g, Work *w) {
    for (int64_t e = 0; e < w->own_ptr[w->n_own]; ++e) w->jx[w->own_at[e]] = 0;
    for (int64_t i = 0; i < g->n_bus; ++i)
        if (w->active[i]) w->unit[i] = w->V[i] / w->vm[i];
    for (int64_t i = 0; i < g->n_bus; ++i) {
        if (!w->active[i]) continue;
        cplx vi = w->V[i];
        for (int64_t k = g->y_indptr[i]; k < g->y_indptr[i + 1]; ++k) {
            int64_t j = g->y_indices[k];
            if (!w->active[j]) continue;
            cplx y = w->ydata[k];
            if (y == 0 && i != j) continue;
            cplx uj = w->unit[j];
            cplx d_va = -I * vi * conj(y * w->V[j]), d_vm = vi * conj(y * uj);
            if (i == j) {
                d_va += I * vi * conj(w->cur[i]);
                d_vm += conj(w->cur[i]) * uj;
            }
            const int64_t *at = g->y_to_j + 4 * k;
            int fp = w->fixed[2 * i], fq = w->fixed[2 * i + 1];
            int fa = w->fixed[2 * j], fm = w->fixed[2 * j + 1];
            if (!fp && !fa) w->jx[at[0]] = creal(d_va);
            if (!fp && !fm) w->jx[at[1]] = creal(d_vm);
            if (!fq && !fa) w->jx[at[2]] = cimag(d_va);
            if (!fq && !fm) w->jx[at[3]] = cimag(d_vm);
        }
    }
}

/* The row's own part of the filled pattern: the positions of the order it solves for, and
 * their entries in the columns it solves for. The unknowns it leaves out are decoupled (unit
 * rows and columns: no entry of theirs is read), and the union's fill restricted to the others
 * holds the fill of the row's own elimination in the same order, so the factorisation and the
 * solves need only these entries (on the union layout, most of a row's are zeros of bus bars
 * out of its power flow). */
static void own_pattern(const Layout *g, Work *w) {
    const int64_t *ip = g->j_indptr, *ix = g->j_indices;
    int64_t n = 0, e = 0;
    for (int64_t i = 0; i < g->m; ++i) {
        w->own_row[i] = -1;
        if (w->fixed[g->unknown[i]]) continue;
        w->own_row[i] = n;
        w->own_pos[n] = i;
        w->own_ptr[n] = e;
        for (int64_t p = ip[i]; p < ip[i + 1]; ++p) {
            if (w->fixed[g->unknown[ix[p]]]) continue;
            if (ix[p] == i) w->own_diag[n] = e;
            w->own_col[e] = ix[p];
            w->own_at[e++] = p;
        }
        ++n;
    }
    w->own_ptr[n] = e;
    w->n_own = n;
}

/* LU of the row's own entries of jx into lu (the own entries in the row's order, so that the
 * elimination and the solves read them with no second indirection), row by row, no pivoting
 * (the order is fixed); returns -1 when a pivot falls below the floor (relative to its row's
 * largest entry). */
static int factorise(const Layout *g, Work *w) {
    const int64_t *col = w->own_col, *at = w->own_at, *ptr = w->own_ptr, *dg = w->own_diag;
    const double *a = w->jx;
    double *lu = w->lu, *x = w->w;
    for (int64_t r = 0; r < w->n_own; ++r) {
        double scale = 0;
        for (int64_t e = ptr[r]; e < ptr[r + 1]; ++e) {
            double v = a[at[e]];
            x[col[e]] = v;
            if (fabs(v) > scale) scale = fabs(v);
        }
        for (int64_t e = ptr[r]; e < dg[r]; ++e) {
            int64_t k = col[e];
            if (x[k] == 0) continue;
            int64_t kr = w->own_row[k];
            double l = x[k] / lu[dg[kr]];
            x[k] = l;
            for (int64_t f = dg[kr] + 1; f < ptr[kr + 1]; ++f) x[col[f]] -= l * lu[f];
        }
        for (int64_t e = ptr[r]; e < ptr[r + 1]; ++e) lu[e] = x[col[e]];
        if (!(fabs(lu[dg[r]]) > g->pivot_floor * scale)) return -1;
    }
    return 0;
}

/* F <- J^-1 F with the row's factors in lu (F in the unknowns' order, x the permuted scratch;
 * a left-out unknown's step is 0, as its F). */
static void lu_solve(const Layout *g, Work *w) {
    const int64_t *col = w->own_col, *ptr = w->own_ptr, *dg = w->own_diag;
    const double *lu = w->lu;
    double *y = w->x;
    for (int64_t u = 0; u < g->m; ++u) y[g->perm[u]] = w->F[u];
    for (int64_t r = 0; r < w->n_own; ++r) {
        double acc = y[w->own_pos[r]];
        for (int64_t e = ptr[r]; e < dg[r]; ++e) acc -= lu[e] * y[col[e]];
        y[w->own_pos[r]] = acc;
    }
    for (int64_t r = w->n_own - 1; r >= 0; --r) {
        double acc = y[w->own_pos[r]];
        for (int64_t e = dg[r] + 1; e < ptr[r + 1]; ++e) acc -= lu[e] * y[col[e]];
        y[w->own_pos[r]] = acc / lu[dg[r]];
    }
    for (int64_t u = 0; u < g->m; ++u) w->F[u] = y[g->perm[u]];
}

/* Newton iterations from V (the row's first guess, magnitudes already set): the iterations,
 * DIVERGED, or REFUSED when a pivot is too small for the fixed order. */
static int64_t newton(const Layout *g, Work *w) {
    own_pattern(g, w);
    for (int64_t i = 0; i < g->n_bus; ++i)
        w->V[i] = w->active[i] ? w->vm[i] * w->start[i] : 0;
    for (int64_t n = 0;; ++n) {
        double worst = mismatch(g, w);
        if (worst < g->tol) return n;
        if (n == g->max_iter || !isfinite(worst)) return DIVERGED;
        jacobian(g, w);
        if (factorise(g, w) != 0) return REFUSED;
        lu_solve(g, w);
        /* each voltage turned by its angle step and scaled by its magnitude's (no
         * trigonometry for the small steps of the later iterations; a bus with no step,
         * as the slack's and those out of the power flow, is left as it is) */
        for (int64_t i = 0; i < g->n_bus; ++i) {
            double d = w->F[2 * i], dm = w->F[2 * i + 1];
            if (d == 0 && dm == 0) continue;
            double before = w->vm[i], c, s;
            w->vm[i] -= dm;
            turn(-d, &c, &s);
            double scale = w->vm[i] / before;
            w->V[i] *= (c * scale) + I * (s * scale);
        }
    }
}

/* solve(ints, reals, cplx, buses, injections, storage_p, gen_v, V, out, iters, rows, solve):
 * solve 0: V holds solutions already; only their results are computed (iters 0). */
static PyObject *solve(PyObject *self, PyObject *args) {
    Py_buffer b_ints, b_reals, b_cplx, b_bars, b_inj, b_sto, b_gv, b_v, b_out, b_it;
    Py_ssize_t rows;
    int do_solve;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*w*w*w*np", &b_ints, &b_reals, &b_cplx, &b_bars,
                          &b_inj, &b_sto, &b_gv, &b_v, &b_out, &b_it, &rows, &do_solve))
        return NULL;
    PyObject *result = NULL;
    Layout g;
    char *mem = NULL;
    if (unpack(&g, b_ints.buf, b_ints.len / 8, b_reals.buf, b_reals.len / 8, b_cplx.buf,
               b_cplx.len / (Py_ssize_t)sizeof(cplx)) != 0) {
        PyErr_SetString(PyExc_ValueError, "a union layout whose sizes do not add up");
        goto done;
    }
    Py_ssize_t n_inj = 2 * g.nl + g.ng, n_bus = g.n_bus;
    Py_ssize_t n_out = 8 * g.nb + 3 * g.nl + 3 * g.ng + 4 * g.ns;
    if (b_bars.len != rows * g.n_elem * 4 || b_inj.len != rows * n_inj * 8 ||
        b_sto.len != rows * g.ns * 8 || b_gv.len != rows * g.ng * 8 ||
        b_v.len != rows * n_bus * (Py_ssize_t)sizeof(cplx) || b_out.len != rows * n_out * 8 ||
        b_it.len != rows * 8) {
        PyErr_SetString(PyExc_ValueError, "newton arrays of the wrong sizes for the layout");
        goto done;
    }
    size_t n_int = 5 * n_bus + 2 * g.nb + g.nl + g.ng + g.ns + g.m + 4 * g.m + 1 + 2 * g.nnz_j;
    size_t n_dbl = g.ng + 2 * n_bus + 2 * g.m + 2 * g.nnz_j + g.m;
    size_t n_cpx = g.nnz_y + 5 * n_bus + 2 * n_bus;
    mem = malloc(n_int * 8 + n_dbl * 8 + n_cpx * sizeof(cplx));
    if (!mem) {
        PyErr_NoMemory();
        goto done;
    }
    Work w;
    cplx *c = (cplx *)mem;
    w.ydata = c; c += g.nnz_y;
    w.S = c; c += n_bus;
    w.V = c; c += n_bus;
    w.cur = c; c += n_bus;
    w.unit = c; c += n_bus;
    w.start = c; c += n_bus;
    cplx *need = c; c += 2 * n_bus;
    int64_t *k = (int64_t *)c;
    w.active = k; k += n_bus;
    w.pv_gen = k; k += n_bus;
    w.pv_count = k; k += n_bus;
    w.reach = k; k += n_bus;
    w.queue = k; k += n_bus;
    w.or_bus = k; k += g.nb;
    w.ex_bus = k; k += g.nb;
    w.load_bus = k; k += g.nl;
    w.gen_bus = k; k += g.ng;
    w.storage_bus = k; k += g.ns;
    w.fixed = k; k += g.m;
    w.own_pos = k; k += g.m;
    w.own_row = k; k += g.m;
    w.own_diag = k; k += g.m;
    w.own_ptr = k; k += g.m + 1;
    w.own_at = k; k += g.nnz_j;
    w.own_col = k; k += g.nnz_j;
    double *d = (double *)k;
    w.q_share = d; d += g.ng;
    w.q_total = d; d += n_bus;
    w.vm = d; d += n_bus;
    w.F = d; d += g.m;
    w.x = d; d += g.m;
    w.jx = d; d += g.nnz_j;
    w.lu = d; d += g.nnz_j;
    w.w = d; d += g.m;
    const int32_t *bars = b_bars.buf;
    const double *inj = b_inj.buf, *sto = b_sto.buf, *gv = b_gv.buf;
    cplx *V = b_v.buf;
    double *out = b_out.buf;
    int64_t *iters = b_it.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; ++r) {
        cplx *v = V + r * n_bus;
        for (int64_t i = 0; i < n_bus; ++i) {
            double m = sqrt(creal(v[i]) * creal(v[i]) + cimag(v[i]) * cimag(v[i]));
            w.vm[i] = m > 0 ? m : 1.0;
            w.start[i] = m > 0 ? v[i] / m : 1.0;  /* the first guess' angle, no trigonometry */
        }
        const double *row_inj = inj + r * n_inj, *row_sto = sto + r * g.ns;
        if (row_network(&g, &w, bars + r * g.n_elem, row_inj, row_sto, gv + r * g.ng) != 0) {
            iters[r] = REFUSED;
            continue;
        }
        if (do_solve) {
            int64_t it = newton(&g, &w);
            iters[r] = it;
            if (it < 0) continue;
            memcpy(v, w.V, n_bus * sizeof(cplx));
        } else {
            iters[r] = 0;
        }
        FlowGrid fg = {n_bus, g.nb, g.nl, g.ng, g.ns, w.gen_bus[g.slack_gen], g.slack_gen,
                       g.y_indptr, g.y_indices, w.ydata, w.active, w.or_bus, w.ex_bus,
                       w.load_bus, w.gen_bus, w.storage_bus, g.sn, g.vn, w.q_share, g.q_fixed,
                       g.y11, g.y12, g.y21, g.y22};
        row_flows(&fg, row_inj, row_sto, w.S, v, need, out + r * n_out);
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    free(mem);
    PyBuffer_Release(&b_ints);
    PyBuffer_Release(&b_reals);
    PyBuffer_Release(&b_cplx);
    PyBuffer_Release(&b_bars);
    PyBuffer_Release(&b_inj);
    PyBuffer_Release(&b_sto);
    PyBuffer_Release(&b_gv);
    PyBuffer_Release(&b_v);
    PyBuffer_Release(&b_out);
    PyBuffer_Release(&b_it);
    return result;
}

/* The root of x's set, halving the path on the way. */
static int64_t root_of(int64_t *parent, int64_t x) {
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

enum { CONNECTIVITY_HEADER = 5 };

/* isolated(ints, topos, load_out, gen_out, slack_out, rows): for each row of topology vectors
 * (int8, bus bars 1, 2 or -1 in the topology layout's positions), which loads and generators
 * the slack does not reach (a disconnected one counts) and whether a slack is off or none is
 * on; the sets of bus bars joined by the branches in service, one union-find per row (see
 * grid_vec.core.topology.isolated_elements). ints: n_sub, n_load, n_gen, n_branch, n_elem,
 * then the loads', generators', origins' and extremities' substations, their positions in the
 * vector, and which generators are slacks. */
static PyObject *isolated(PyObject *self, PyObject *args) {
    Py_buffer b_ints, b_topos, b_load, b_gen, b_slack;
    Py_ssize_t rows;
    if (!PyArg_ParseTuple(args, "y*y*w*w*w*n", &b_ints, &b_topos, &b_load, &b_gen, &b_slack,
                          &rows))
        return NULL;
    PyObject *result = NULL;
    int64_t *parent = NULL;
    const int64_t *h = b_ints.buf;
    Py_ssize_t n_ints = b_ints.len / 8;
    if (n_ints < CONNECTIVITY_HEADER) goto sizes;
    int64_t n_sub = h[0], nl = h[1], ng = h[2], nb = h[3], n_elem = h[4];
    if (n_ints != CONNECTIVITY_HEADER + 2 * nl + 3 * ng + 4 * nb) goto sizes;
    if (b_topos.len != rows * n_elem || b_load.len != rows * nl || b_gen.len != rows * ng ||
        b_slack.len != rows)
        goto sizes;
    const int64_t *load_sub = h + CONNECTIVITY_HEADER, *gen_sub = load_sub + nl,
                  *or_sub = gen_sub + ng, *ex_sub = or_sub + nb, *pos_load = ex_sub + nb,
                  *pos_gen = pos_load + nl, *pos_or = pos_gen + ng, *pos_ex = pos_or + nb,
                  *is_slack = pos_ex + nb;
    parent = malloc(4 * n_sub * sizeof(int64_t));
    if (!parent) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t *fed = parent + 2 * n_sub;
    const int8_t *topos = b_topos.buf;
    uint8_t *load_out = b_load.buf, *gen_out = b_gen.buf, *slack_out = b_slack.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; ++r) {
        const int8_t *t = topos + r * n_elem;
        for (int64_t i = 0; i < 2 * n_sub; ++i) {
            parent[i] = i;
            fed[i] = 0;
        }
        /* bus bar 2 of substation s is node n_sub + s; -1 lands on bus bar 1 (such an
         * element counts as isolated whatever its node) */
        for (int64_t j = 0; j < nb; ++j) {
            int8_t a = t[pos_or[j]], b = t[pos_ex[j]];
            if (a <= 0 || b <= 0) continue;
            int64_t ra = root_of(parent, or_sub[j] + (a == 2) * n_sub);
            int64_t rb = root_of(parent, ex_sub[j] + (b == 2) * n_sub);
            if (ra != rb) parent[ra > rb ? ra : rb] = ra < rb ? ra : rb;
        }
        int any_on = 0, off = 0;
        for (int64_t j = 0; j < ng; ++j) {
            if (!is_slack[j]) continue;
            int8_t bar = t[pos_gen[j]];
            if (bar > 0) {
                fed[root_of(parent, gen_sub[j] + (bar == 2) * n_sub)] = 1;
                any_on = 1;
            } else {
                off = 1;
            }
        }
        slack_out[r] = off || !any_on;
        for (int64_t j = 0; j < nl; ++j) {
            int8_t bar = t[pos_load[j]];
            load_out[r * nl + j] = bar < 0 || !fed[root_of(parent, load_sub[j] + (bar == 2) * n_sub)];
        }
        for (int64_t j = 0; j < ng; ++j) {
            int8_t bar = t[pos_gen[j]];
            gen_out[r * ng + j] = bar < 0 || !fed[root_of(parent, gen_sub[j] + (bar == 2) * n_sub)];
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
    goto done;
sizes:
    PyErr_SetString(PyExc_ValueError, "connectivity arrays of the wrong sizes");
done:
    free(parent);
    PyBuffer_Release(&b_ints);
    PyBuffer_Release(&b_topos);
    PyBuffer_Release(&b_load);
    PyBuffer_Release(&b_gen);
    PyBuffer_Release(&b_slack);
    return result;
}

/* --- any_nonzero: the core's "is any element set" test on the small arrays of a step, at
 * the cost of numpy's C count_nonzero (its public np.count_nonzero is a Python wrapper
 * three times dearer; ndarray.any ten times), over any shape and strides. */

/* Whether one item is nonzero as numpy counts it: a float's -0.0 is zero (its bytes are
   not), NaN is not; any other kind is nonzero when one of its bytes is. */
static int item_nonzero(const char *p, char kind, Py_ssize_t size) {
    if (kind == 'd') return *(const double *)p != 0.0;
    if (kind == 'f') return *(const float *)p != 0.0f;
    if (kind == 'Z') return ((const double *)p)[0] != 0.0 || ((const double *)p)[1] != 0.0;
    for (Py_ssize_t i = 0; i < size; i++)
        if (p[i]) return 1;
    return 0;
}

/* Whether any of ``len`` bytes is nonzero: eight at a time, then the rest. */
static int bytes_nonzero(const char *p, Py_ssize_t len) {
    Py_ssize_t i = 0;
    uint64_t word, words[8];
    for (; i + 64 <= len; i += 64) {  /* a cache line at a time: the compiler's vectors */
        memcpy(words, p + i, 64);
        if (words[0] | words[1] | words[2] | words[3] | words[4] | words[5] | words[6] | words[7])
            return 1;
    }
    for (; i + 8 <= len; i += 8) {
        memcpy(&word, p + i, 8);
        if (word) return 1;
    }
    for (; i < len; i++)
        if (p[i]) return 1;
    return 0;
}

static int any_from(const char *p, int dim, const Py_buffer *v, char kind) {
    if (dim == v->ndim) return item_nonzero(p, kind, v->itemsize);
    const Py_ssize_t n = v->shape[dim], step = v->strides[dim];
    if (dim == v->ndim - 1) {  /* the last axis: its items in one loop */
        if (kind == 'B' && v->itemsize == 1) {
            for (Py_ssize_t i = 0; i < n; i++)
                if (p[i * step]) return 1;
            return 0;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if (item_nonzero(p + i * step, kind, v->itemsize)) return 1;
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (any_from(p + i * step, dim + 1, v, kind)) return 1;
    return 0;
}

static PyObject *any_nonzero(PyObject *self, PyObject *arg) {
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_STRIDES | PyBUF_FORMAT) < 0) return NULL;
    const char *f = v.format ? v.format : "B";
    while (*f == '<' || *f == '>' || *f == '=' || *f == '@' || *f == '!') f++;
    char kind = 'B';
    if ((f[0] == 'd' && v.itemsize == 8) || (f[0] == 'f' && v.itemsize == 4)) kind = f[0];
    else if (f[0] == 'Z' && f[1] == 'd' && v.itemsize == 16) kind = 'Z';
    else if (f[0] == 'e' || f[0] == 'g' || f[0] == 'Z') {
        PyBuffer_Release(&v);
        PyErr_Format(PyExc_TypeError, "any_nonzero: unsupported item format %s", v.format);
        return NULL;
    }
    int found;
    if (kind == 'B' && PyBuffer_IsContiguous(&v, 'A')) {
        found = bytes_nonzero(v.buf, v.len);
    } else {
        found = any_from(v.buf, 0, &v, kind);
    }
    PyBuffer_Release(&v);
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"isolated", isolated, METH_VARARGS,
     "isolated(ints, topos, load_out, gen_out, slack_out, rows): the loads and generators the "
     "slack does not reach, per row (see grid_vec.core.topology.isolated_elements)."},
    {"any_nonzero", any_nonzero, METH_O,
     "any_nonzero(array) -> bool: whether any element of an array (any shape and strides; "
     "bools, integers, float32/64 or complex128) is nonzero, as numpy's count_nonzero counts."},
    {"solve", solve, METH_VARARGS,
     "solve(ints, reals, cplx, buses, injections, storage_p, gen_v, V, out, iters, rows, solve): "
     "Newton-solve rows of any topology in place (see grid_vec.grid.newton.solve_rows)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "newton_kernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit_newton_kernel(void) { return PyModule_Create(&module); }
