"""The plugin's routes, one ``APIRouter`` per area; :func:`~airflow_retry_provider.plugin.app.create_app`
includes them all.

- :mod:`.letter_pages`: the dead-letter pages (queue, letter, preview, replay progress, task-instance tab);
- :mod:`.letters_api`: the letters as JSON, and their CSV / JSON exports;
- :mod:`.actions`: preview, replay, park and dismiss (audited in Airflow's Audit Log);
- :mod:`.tries`: the Retries tab of a task instance and ``/api/tries``;
- :mod:`.reconciliation`: "Medallion gaps" and "Connector health", pages and JSON.
"""
