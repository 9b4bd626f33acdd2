// The kernel's EEVDF state of task groups on one CPU, at wake-ups and context switches.
//
// A testbed node is started with setsid(2), so with sched_autogroup each node is
// one scheduling group (`task->se.parent`), an entity of the CPU's root run queue. For
// bench/kernel_eevdf.py, which reads what this writes to the ring buffer:
//
// - WAKING, a thread of a group with nothing queued wakes (`sched_waking`, before the
//   group is placed): the lag the group kept (`vlag`, `update_entity_lag`);
// - WAKE, every wake-up of a grouped thread: whether its group was queued already;
// - SWITCH_IN, a group's thread runs after another group's: the root queue's sums, the
//   group's virtual runtime, from which avg_vruntime - vruntime (its margin: >= 0 is
//   eligible, `vruntime_eligible`), and its weight (`calc_group_shares`; 1024 is a
//   nice-0 task's);
// - SWITCH_OUT, a group's thread leaves the CPU runnable (preempted) for another group's:
//   the same for that group;
// - SWITCH, every switch on the CPU: the threads and their groups' virtual runtimes, and
//   where the leaving thread was (`orig_ax` of its user registers): in system call N
//   (LEFT_SYSCALL + N; Go's P is then in _Psyscall) or in user code (LEFT_USER: it left at
//   an interrupt's return, its P running).
//
// The root queue's average is `zero_vruntime + sum_w_vruntime / sum_weight` with the
// running entity added (kernel/sched/fair.c, avg_vruntime); the division is left to user
// space (signed 64-bit division needs a newer BPF instruction set than clang 14 emits).

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

enum kind { WAKING, SWITCH_IN, SWITCH_OUT, SWITCH, WAKE };
enum left { LEFT_UNKNOWN, LEFT_USER, LEFT_SYSCALL };

struct event {
	u64 t;
	u32 kind;
	u32 tgid;
	u32 tid;
	u32 nr_queued;
	s64 vlag;
	s64 sum;
	s64 load;
	s64 key;
	u32 other;
	u32 pad;
};

// Set by the loader: the CPU to watch.
const volatile u32 watched_cpu = 1;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);
} events SEC(".maps");

// The root queue's weighted sum and weight with the running entity added, and the
// group's key (vruntime - zero_vruntime).
static __always_inline void root_state(struct event *e, struct sched_entity *g)
{
	struct cfs_rq *q = g->cfs_rq;
	struct sched_entity *curr = q->curr;
	u64 zero = q->zero_vruntime;
	s64 sum = q->sum_w_vruntime;
	s64 load = q->sum_weight;

	if (curr && curr->on_rq) {
		s64 w = curr->load.weight >> 10;
		sum += (s64)(curr->vruntime - zero) * w;
		load += w;
	}
	e->sum = sum;
	e->load = load;
	e->key = (s64)(g->vruntime - zero);
	e->nr_queued = q->nr_queued;
	e->vlag = g->load.weight >> 10;
}

static __always_inline struct event *reserve(u32 kind, struct task_struct *p)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->t = bpf_ktime_get_ns();
	e->kind = kind;
	e->tgid = p->tgid;
	e->tid = p->pid;
	return e;
}

// A group's place on the root queue as `p`'s thread of it runs or leaves the CPU, the
// other side of the switch being `other`'s process.
static __always_inline void group_state(u32 kind, struct task_struct *p, struct sched_entity *g,
					struct task_struct *other)
{
	struct event *e = reserve(kind, p);

	if (!e)
		return;
	root_state(e, g);
	e->other = other->tgid;
	bpf_ringbuf_submit(e, 0);
}

SEC("tp_btf/sched_waking")
int BPF_PROG(on_waking, struct task_struct *p)
{
	struct sched_entity *g = p->se.parent;
	struct event *e;

	if (!g || p->wake_cpu != watched_cpu)
		return 0;
	e = reserve(WAKE, p);
	if (e) {
		e->nr_queued = g->on_rq;
		bpf_ringbuf_submit(e, 0);
	}
	if (g->on_rq)
		return 0;
	e = reserve(WAKING, p);
	if (e) {
		root_state(e, g);
		e->vlag = g->vlag;
		bpf_ringbuf_submit(e, 0);
	}
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	struct sched_entity *in = next->se.parent;
	struct sched_entity *out = prev->se.parent;
	struct event *e;

	if (bpf_get_smp_processor_id() != watched_cpu)
		return 0;
	e = reserve(SWITCH, prev);
	if (e) {
		e->vlag = prev_state;
		e->other = next->pid;
		e->sum = next->tgid;
		e->load = in ? (s64)in->vruntime : 0;
		e->key = out ? (s64)out->vruntime : 0;
		s64 call = BPF_CORE_READ((struct pt_regs *)bpf_task_pt_regs(prev), orig_ax);
		e->pad = call < 0 ? LEFT_USER : LEFT_SYSCALL + (u32)call;
		bpf_ringbuf_submit(e, 0);
	}
	if (in && in != out)
		group_state(SWITCH_IN, next, in, prev);
	if (out && out != in && prev_state == 0 && out->on_rq)
		group_state(SWITCH_OUT, prev, out, next);
	return 0;
}
