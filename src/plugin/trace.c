/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace: the flight recorder of every communicator of the process as one
 * Chrome/Perfetto trace file, written on request (a trigger file,
 * SIGUSR2), after a slow operation or when a hang is declared.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin/nwp.h"

/* s as a JSON string (quoted, escaped). */
void nwp_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else if (ch < 0x20)
			fprintf(f, "\\u%04x", ch);
		else
			fputc(ch, f);
	}
	fputc('"', f);
}

static void json_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%llu.%03llu", (unsigned long long)(ns / 1000), (unsigned long long)(ns % 1000));
}

/* One flight-recorder entry of c as a complete ("X") trace event. */
static void dump_op(FILE *f, const struct nwp_comm *c, const struct nws_opent *e)
{
	fputs(",\n{\"name\":", f);
	nwp_json_str(f, nws_op_name(e->op));
	fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", nws_src_name(e->src));
	json_us(f, e->start_ns);
	fputs(",\"dur\":", f);
	json_us(f, e->end_ns - e->start_ns);
	fprintf(f, ",\"pid\":%d,\"tid\":%d,\"args\":{\"bytes\":%llu,\"count\":%llu,\"src\":\"%s\"",
	        c->rank, c->index, (unsigned long long)e->bytes, (unsigned long long)e->count,
	        nws_src_name(e->src));
	if (e->flags & NWS_OPF_SEQ)
		fprintf(f, ",\"seq\":%llu", (unsigned long long)e->seq);
	fputs(",\"algo\":", f);
	nwp_json_str(f, e->algo);
	fputs(",\"proto\":", f);
	nwp_json_str(f, e->proto);
	fprintf(f, ",\"nchannels\":%u,\"peer\":%d,\"enqueue_us\":", e->nchannels, e->peer);
	json_us(f, e->enq_ns);
	fprintf(f, ",\"slow\":%s,\"partial\":%s,\"incomplete\":%s}}", (e->flags & NWS_OPF_SLOW) ? "true" : "false",
	        (e->flags & NWS_OPF_PARTIAL) ? "true" : "false", (e->flags & NWS_OPF_INCOMPLETE) ? "true" : "false");
}

/* c's process and thread names (metadata events), its flight recorder, oldest first, then the ops in flight. */
static void dump_comm(FILE *f, const struct nwp_comm *c, int first, uint64_t now)
{
	fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d (",
	        first ? "" : ",\n", c->rank, c->rank);
	fprintf(f, "%s pid %d)\"}}", nwp_g.host, nwp_g.pid);
	char tname[128];
	snprintf(tname, sizeof(tname), "comm %s%s%016llx", c->name, c->name[0] ? " " : "",
	         (unsigned long long)c->comm_hash);
	fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
	        c->rank, c->index);
	nwp_json_str(f, tname);
	fputs("}}", f);
	uint64_t n = c->ring_head < c->ring_len ? c->ring_head : c->ring_len;
	for (uint64_t k = c->ring_head - n; k < c->ring_head; k++) {
		const struct nws_opent *e = &c->ring[k % c->ring_len];
		if (e->idx)
			dump_op(f, c, e);
	}
	nwp_dump_inflight(f, c, now);
}

/*
 * Write the flight recorder of every communicator of this process as one
 * Chrome/Perfetto trace (traceEvents, ph "X", ts/dur in us, pid = rank,
 * tid = communicator) to $NCCLWATCH_DIR/trace.<host>.<pid>.<ms>.json,
 * through a temporary file and rename. Returns 0 or -1.
 */
int nwp_dump_all(const char *why)
{
	uint64_t now = nwp_realtime_ns();
	char name[128], path[600], tmp[620];
	snprintf(name, sizeof(name), "trace.%s.%d.%llu.json", nwp_g.host, nwp_g.pid,
	         (unsigned long long)(now / NWP_MS));
	snprintf(path, sizeof(path), "%s/%s", nwp_g.dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -1;
	}
	fputs("{\"traceEvents\":[\n", f);
	int first = 1;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		struct nwp_comm *c = nwp_comm_at(i);
		if (!c || !c->alive || !c->ring)
			continue;
		dump_comm(f, c, first, now);
		first = 0;
	}
	fputs("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"reason\":", f);
	nwp_json_str(f, why);
	fputs(",\"progress\":[", f);
	first = 1;
	for (int i = 0; i < nwp_g.max_comms; i++) {
		struct nwp_comm *c = nwp_comm_at(i);
		if (!c || !c->alive || !c->ring)
			continue;
		nwp_dump_progress(f, c, first);
		first = 0;
	}
	fputs("]", f);
	fputs(",\"host\":", f);
	nwp_json_str(f, nwp_g.host);
	fprintf(f, ",\"pid\":%d}}\n", nwp_g.pid);
	int bad = ferror(f);
	if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	nwp_copy_str(nwp_g.last_dump, sizeof(nwp_g.last_dump), name);
	nwp_g.dumps++;
	return 0;
}
