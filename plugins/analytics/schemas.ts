import Joi from 'joi';
import { orgId, projectId, timestamp } from '../../core/http/schemas.ts';
import { REPORT_WINDOWS } from '../../core/http/windows.ts';

const count = Joi.number().integer().min(0);
const window = Joi.string()
  .valid(...REPORT_WINDOWS)
  .required();

export const orgParams = Joi.object({ org_id: orgId.required() });

const jobCounts = {
  created: count.required().description('created in the window'),
  completed: count.required().description('closed done in the window'),
  failed: count.required().description('closed in the window because an attempt failed'),
  active: count.required().description('running now'),
};
const jobsSchema = Joi.object(jobCounts).label('AnalyticsJobs');
const pipelineFigures = {
  runs: count.required().description('runs started in the window'),
  success_rate: Joi.number().min(0).max(1).required().description('succeeded / finished runs of the window; 0 when none finished'),
  avg_duration_seconds: Joi.number().min(0).required().description('mean duration of the finished runs; 0 when none finished'),
};
const pipelinesSchema = Joi.object(pipelineFigures).label('AnalyticsPipelines');
const status = Joi.string().valid('healthy', 'degraded', 'unknown');

export const summarySchema = Joi.object({
  as_of: timestamp.required(),
  window,
  projects: count.required().description('live projects of the org'),
  jobs: jobsSchema.required(),
  pipelines: pipelinesSchema.required(),
  environments: Joi.object({ total: count.required(), healthy: count.required(), degraded: count.required(), unknown: count.required() })
    .required()
    .label('AnalyticsEnvironments'),
}).label('AnalyticsSummary');

export const jobsReportSchema = Joi.object({
  as_of: timestamp.required(),
  window,
  jobs: jobsSchema.required(),
  by_project: Joi.array()
    .items(Joi.object({ project_id: projectId.required(), ...jobCounts }).label('AnalyticsProjectJobs'))
    .required(),
  by_day: Joi.array()
    .items(
      Joi.object({
        day: Joi.string().required().description('YYYY-MM-DD, UTC'),
        created: count.required(),
        completed: count.required(),
        failed: count.required(),
      }).label('AnalyticsDayJobs'),
    )
    .required(),
}).label('AnalyticsJobsReport');

export const pipelinesReportSchema = Joi.object({
  as_of: timestamp.required(),
  window,
  pipelines: pipelinesSchema.required(),
  by_pipeline: Joi.array()
    .items(
      Joi.object({
        project_id: projectId.required(),
        pipeline_name: Joi.string().required(),
        succeeded: count.required(),
        failed: count.required(),
        ...pipelineFigures,
      }).label('AnalyticsPipelineRuns'),
    )
    .required(),
}).label('AnalyticsPipelinesReport');

export const envHealthSchema = Joi.object({
  as_of: timestamp.required(),
  environments: Joi.array()
    .items(Joi.object({ name: Joi.string().required(), project_id: projectId.required(), status: status.required() }).label('EnvironmentHealth'))
    .required(),
}).label('AnalyticsEnvHealth');
