/* Placeholder: the profiler plugin lands with its own issue. */
int nw_plugin_placeholder(void);
int nw_plugin_placeholder(void) { return 0; }
