// Loads probe.bpf.o, watches one CPU for a number of seconds and prints each event as a
// line of integers: t kind tgid tid nr_queued vlag sum load key other left.
//
//     probe OBJECT CPU SECONDS > events.txt

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <bpf/libbpf.h>

struct event {
	unsigned long long t;
	unsigned kind, tgid, tid, nr_queued;
	long long vlag, sum, load, key;
	unsigned other, pad;
};

static int print_event(void *ctx, void *data, size_t size)
{
	const struct event *e = data;

	printf("%llu %u %u %u %u %lld %lld %lld %lld %u %u\n", e->t, e->kind, e->tgid, e->tid,
	       e->nr_queued, e->vlag, e->sum, e->load, e->key, e->other, e->pad);
	return 0;
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s OBJECT CPU SECONDS\n", argv[0]);
		return 2;
	}
	unsigned cpu = (unsigned)atoi(argv[2]);
	double window = atof(argv[3]);
	struct bpf_object *obj = bpf_object__open_file(argv[1], NULL);

	if (!obj) {
		fprintf(stderr, "cannot open %s\n", argv[1]);
		return 1;
	}
	struct bpf_map *rodata = bpf_object__find_map_by_name(obj, ".rodata");

	if (!rodata || bpf_map__set_initial_value(rodata, &cpu, sizeof(cpu))) {
		fprintf(stderr, "cannot set the watched CPU\n");
		return 1;
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s (root, and a kernel with BTF?)\n", argv[1]);
		return 1;
	}
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__attach(prog)) {
			fprintf(stderr, "cannot attach %s\n", bpf_program__name(prog));
			return 1;
		}
	}
	struct ring_buffer *ring =
		ring_buffer__new(bpf_object__find_map_fd_by_name(obj, "events"), print_event, NULL, NULL);
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (seconds_since(&start) < window)
		ring_buffer__poll(ring, 100);
	ring_buffer__consume(ring);
	return 0;
}
