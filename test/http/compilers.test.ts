/**
 * Route schemas are compiled once per process: an app built after another
 * reuses the first one's compiled validators and serializers, even where its
 * routes made their schemas anew (as `answer()` does).
 */
import Fastify, { type FastifyReply } from 'fastify'
import t from 'tap'
import { Type } from '@sinclair/typebox'
import { useSharedCompilers } from '../../src/http/compilers.js'
import { Problem } from '../../schemas/common.js'
import { answer, problems } from '../../schemas/responses.js'

interface Compiled { serialize: unknown, validate: unknown }

/** An app with one route whose schemas are made anew for it; answers what fastify compiled for that route. */
async function compiledFor (description: string): Promise<Compiled> {
  const app = Fastify()
  t.teardown(() => app.close())
  app.addSchema(Problem)
  useSharedCompilers(app, [Problem])
  let compiled: Compiled | undefined
  app.post('/thing', {
    schema: {
      body: Type.Object({ name: Type.String({ maxLength: 10 }) }),
      response: { 200: answer(Type.Object({ name: Type.String() }), description), ...problems('invalid_request') }
    }
  }, async (req, reply: FastifyReply) => {
    compiled = { serialize: reply.getSerializationFunction('200'), validate: req.getValidationFunction('body') }
    return { name: (req.body as { name: string }).name }
  })
  const res = await app.inject({ method: 'POST', url: '/thing', payload: { name: 'tile' } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'tile' })
  const bad = await app.inject({ method: 'POST', url: '/thing', payload: { name: 'a name far too long' } })
  t.equal(bad.statusCode, 400, 'the body is validated')
  return compiled!
}

t.test('a second app with the same route schemas, made anew, reuses the compiled validator and serializer', async (t) => {
  const first = await compiledFor('The thing.')
  const second = await compiledFor('The thing.')
  t.equal(second.serialize, first.serialize, 'the same serializer')
  t.equal(second.validate, first.validate, 'the same validator')
})

t.test('a schema that differs is compiled for itself', async (t) => {
  const first = await compiledFor('The thing.')
  const other = await compiledFor('Another thing.')
  t.not(other.serialize, first.serialize)
})
