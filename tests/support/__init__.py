"""Helpers shared by the test suite (not shipped with tracekit): paths of the test inputs,
throwaway stores, the report and roofline scenarios, the query-plan watcher."""
