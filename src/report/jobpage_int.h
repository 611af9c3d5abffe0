/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jobpage_int: the sections of a job's page that jobpage_nccl.c writes for
 * jobpage.c. Internal to src/report.
 */
#ifndef NW_REPORT_JOBPAGE_INT_H
#define NW_REPORT_JOBPAGE_INT_H

#include <stdio.h>

#include "job/job.h"
#include "report/report.h"

/* NCCL's choices and environment per node, from logscan's reading of the captured logs. */
void nw_report_job_nccl(FILE *f, const struct nw_job_view *v);
/* The nodes' clock offsets and how each was estimated (several nodes only). */
void nw_report_job_clocks(FILE *f, const struct nw_job_view *v);
/* The files kept with the job, linked. */
void nw_report_job_files(FILE *f, const struct nw_report_job_links *links);

#endif
