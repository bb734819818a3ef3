"""OSWorld task JSON, as-is: loading, the offline file cache, setup steps, getters, metrics, evaluation and the
check that says which tasks this env can play.

    tasks.py      load_task / load_tasks -> Task(family="desktop", spec={"osworld": <the JSON dict>})
    cache.py      FileCache: download URLs and cloud_file paths -> local files
    setup.py      run_steps: download, open, launch, execute/command, sleep, activate_window, close_window
    getters.py    vm_file, cloud_file, vm_command_line, vm_command_error, rule, accessibility_tree, cache_file
    metrics/      the supported metrics (text, general, table, docx)
    evaluator.py  evaluate(client, task_json, cache=..., last_action=...) -> float in [0, 1]
    runnable.py   not_runnable_reasons(task_json, cache=..., has_app=...) -> [] when runnable
    errors.py     NotRunnable, BadTaskFile, SetupFailed, EvaluationError
"""
