/* SPDX-License-Identifier: MIT */
#ifndef LINERATE_CMDS_H
#define LINERATE_CMDS_H

/* One entry point per subcommand; each returns the process exit code. */
int cmd_bench(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_crypto(int argc, char **argv);
int cmd_gen(int argc, char **argv);
int cmd_disk(int argc, char **argv);
int cmd_send(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_recv(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_completion(int argc, char **argv);
int cmd_results(int argc, char **argv);
int cmd_plot(int argc, char **argv);

/* Usage text of each subcommand. */
extern const char cmd_bench_usage[];
extern const char cmd_serve_usage[];
extern const char cmd_token_usage[];
extern const char cmd_crypto_usage[];
extern const char cmd_gen_usage[];
extern const char cmd_disk_usage[];
extern const char cmd_send_usage[];
extern const char cmd_get_usage[];
extern const char cmd_recv_usage[];
extern const char cmd_doctor_usage[];
extern const char cmd_completion_usage[];
extern const char cmd_results_usage[];
extern const char cmd_plot_usage[];

/* Option tables of each (get reads send's), for completion and checks. */
struct cmd_opts;
extern const struct cmd_opts cmd_bench_opts;
extern const struct cmd_opts cmd_serve_opts;
extern const struct cmd_opts cmd_crypto_opts;
extern const struct cmd_opts cmd_gen_opts;
extern const struct cmd_opts cmd_disk_opts;
extern const struct cmd_opts cmd_send_opts;
extern const struct cmd_opts cmd_recv_opts;
extern const struct cmd_opts cmd_doctor_opts;
extern const struct cmd_opts cmd_results_opts;
extern const struct cmd_opts cmd_plot_opts;

#endif
